// The Node comparison's result (bench/node-compare.ts) and its table: this build on the
// bench's Node (the project's) and another side (another Node, another build, or both), side by
// side, with the first's figure over the second's. Pure.
import type { StartupTimes } from './report';
import { type LatencySummary, percentile, ratio } from './stats';
import type { StreamRow } from './streams-report';

const MiB = 2 ** 20;

export interface NodeSideInfo {
  /** How the table names it. */
  label: string;
  /** The binary main.js's shebang found first on PATH (checked against each shim's /proc/<pid>/exe). */
  node: string;
  version: string;
  /** The main.js it ran: the build's own, or a copy with that Node's code cache. */
  mainJs: string;
}

/** One figure per side: [the bench's Node, the other]. */
type BothSides<T> = { project: T; other: T };

export interface NodeCompareResult {
  meta: {
    date: string;
    mode: 'full' | 'quick';
    run: string;
    docker: { version: string; apiVersion: string; kernel: string; storageDriver: string; cgroupDriver: string };
    machine: { cpuModel: string; cores: number; memoryBytes: number; os: string };
    shimLogLevel: string;
    durationSeconds: number;
  };
  sides: BothSides<NodeSideInfo>;
  /**
   * Fresh shims, started in turns, each read `settleMs` after its first Version answer with no
   * call in between (run.ts's idle RSS): per start, the RSS and what holds it (idle.ts's
   * memoryBreakdown: `rss` and residentByMapping's kinds, bytes).
   */
  idleRss: { settleMs: number } & BothSides<Array<Record<string, number>>>;
  /** Each lifecycle call's milliseconds on both shims and the raw Docker calls, in turns. */
  lifecycle: Array<{ call: string; raw: LatencySummary } & BothSides<LatencySummary>>;
  /** The streams rows of both shims, measured in the same turns beside the docker CLI. */
  streams: BothSides<StreamRow[]>;
  /** exec → first answers of each side on the same stopped shim's state directory, in turns. */
  startup: { containers: number; runs: number } & BothSides<StartupTimes>;
}

const median = (xs: readonly number[]): number => (xs.length === 0 ? NaN : percentile(xs, 0.5));
const mib = (bytes: number): string => (bytes / MiB).toFixed(1);
const ms = (n: number): string => n.toFixed(1);
const ratioText = (project: number, other: number): string => ratio(project, other)?.toFixed(2) ?? 'n/a';
/** Node's binary's resident pages (its code, read-only data and data): the part that is the Node, not the shim. */
const binaryBytes = (start: Record<string, number>): number => (start.exeCode ?? 0) + (start.exeReadOnly ?? 0) + (start.exeData ?? 0);

function row(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

/** A memory figure over the starts: median (min-max). */
function spread(values: readonly number[]): string {
  return `${mib(median(values))} (${mib(Math.min(...values))}-${mib(Math.max(...values))})`;
}

export function renderNodeCompareTable(r: NodeCompareResult): string {
  const { project, other } = r.sides;
  const lines = [
    row(['part', 'figure', project.label, other.label, `${project.version} / ${other.version}`]),
    row(['---', '---', '---:', '---:', '---:']),
  ];
  const rss = { project: r.idleRss.project.map((s) => s.rss ?? 0), other: r.idleRss.other.map((s) => s.rss ?? 0) };
  const binary = { project: r.idleRss.project.map(binaryBytes), other: r.idleRss.other.map(binaryBytes) };
  const starts = `${r.idleRss.project.length} / ${r.idleRss.other.length} starts`;
  lines.push(
    row(['idle RSS', `fresh shim, ${r.idleRss.settleMs / 1000} s after its first answer, MiB: median (min-max) of ${starts}`, spread(rss.project), spread(rss.other), ratioText(median(rss.project), median(rss.other))]),
    row(['idle RSS', "of which node's binary (code, read-only data, data), MiB", spread(binary.project), spread(binary.other), ratioText(median(binary.project), median(binary.other))]),
  );
  for (const l of r.lifecycle) {
    lines.push(row(['lifecycle', `${l.call} p50 ms (${l.project.n} rounds; raw Docker ${ms(l.raw.p50)})`, ms(l.project.p50), ms(l.other.p50), ratioText(l.project.p50, l.other.p50)]));
  }
  r.streams.project.forEach((p, i) => {
    const o = r.streams.other[i];
    if (!o || o.case !== p.case || o.transport !== p.transport) throw new Error(`the other Node's streams rows do not match the project's at ${p.case} over ${p.transport}`);
    const what = `${p.case} ${p.bytes / MiB} MiB over ${p.transport}`;
    lines.push(
      row(['streams', `${what}: MiB/s (${p.rounds} rounds; docker CLI ${p.raw.mibPerSecond})`, String(p.shim.mibPerSecond), String(o.shim.mibPerSecond), ratioText(p.shim.mibPerSecond, o.shim.mibPerSecond)]),
      row(['streams', `${what}: shim CPU s/GiB`, String(p.shim.shimCpuSecondsPerGiB), String(o.shim.shimCpuSecondsPerGiB), ratioText(p.shim.shimCpuSecondsPerGiB, o.shim.shimCpuSecondsPerGiB)]),
    );
  });
  const st = r.startup;
  for (const [call, key] of [
    ['Version', 'version'],
    ['ListContainers', 'listContainers'],
  ] as const) {
    const [p, o] = [st.project[key], st.other[key]];
    lines.push(row([`startup @${st.containers}`, `exec -> first ${call} answer, ms p50 / max (${p.n} runs)`, `${ms(p.p50)} / ${ms(p.max)}`, `${ms(o.p50)} / ${ms(o.max)}`, ratioText(p.p50, o.p50)]));
  }
  return lines.join('\n');
}

export function renderNodeCompareHeader(r: NodeCompareResult): string {
  const m = r.meta;
  return [
    `# ${r.sides.project.label} and ${r.sides.other.label} (${m.mode}, ${m.date}, ${m.durationSeconds} s)`,
    '',
    `Docker ${m.docker.version} (API ${m.docker.apiVersion}, ${m.docker.storageDriver}, cgroup ${m.docker.cgroupDriver}), kernel ${m.docker.kernel}; ${m.machine.cores} x ${m.machine.cpuModel}, ${(m.machine.memoryBytes / 2 ** 30).toFixed(1)} GiB. The sides take turns in every part; the last column is the first side's figure over the second's.`,
    '',
    `- ${r.sides.project.label}: ${r.sides.project.node} runs ${r.sides.project.mainJs}`,
    `- ${r.sides.other.label}: ${r.sides.other.node} runs ${r.sides.other.mainJs}${r.sides.other.node === r.sides.project.node ? '' : ' (a copy of the build, its code cache made by that Node)'}`,
  ].join('\n');
}
