// The scale mode's result (bench/scale.ts, issue 18 point 4: 1,000 containers on one node), its
// targets, the steps it populates to and how many pods still fit the machine, and its table.
// Pure.
import type { KubeletLoopResult } from './kubelet-loop';
import type { OpenFiles } from './procfs';
import type { BenchResult, CpuPerCallRow, TargetCheck } from './report';
import type { LatencySummary } from './stats';

export interface ScaleReadRow {
  call: string;
  rawCall: string;
  shim: LatencySummary;
  /** Not measured for the stats rows at scale (a Docker stats read per container per call). */
  raw: LatencySummary | null;
}

/** dockerd over idle one-second slots (no calls from the bench), and what it holds at the end. */
export interface DockerdIdle {
  seconds: number;
  /** The median slot × 30: robust to a burst of the other users of the shared daemon. */
  cpuMsPer30s: number;
  /** All slots together, gross. */
  cpuMs: number;
  rssBytes: number;
  threads: number;
  files: OpenFiles;
}

export interface ScaleStep {
  /** Containers the run made (a pause and one app container per pod). */
  containers: number;
  pods: number;
  /** What Docker held (everyone's: the daemon is shared). */
  docker: { all: number; shimLabelled: number; running: number };
  memAvailableBytes: number;
  reads: ScaleReadRow[];
  cpuPerCall: CpuPerCallRow[];
  /** The shim's, after the reads and per-call calls. */
  /** rssBytes: at the end of kubelet's loop; afterCallsBytes: right after the per-call reads (20 of each RPC back to back). */
  shim: { rssBytes: number; afterCallsBytes?: number; peakBytes: number; files: OpenFiles };
  kubeletLoop: KubeletLoopResult;
  /** dockerd idle with the shim running (its log streams, one per app container, open) and with it stopped. */
  logStreams: { withShim: DockerdIdle; withoutShim: DockerdIdle };
  /** A restarted shim on this step's state directory, in a service's environment. */
  startup: { runs: number; version: LatencySummary; listContainers: LatencySummary };
}

export interface ScaleResult {
  meta: Pick<BenchResult['meta'], 'date' | 'run' | 'node' | 'docker' | 'machine' | 'shimLogLevel' | 'readIterations' | 'durationSeconds'>;
  /** Containers asked for (--containers). */
  requested: number;
  /** Why the run stopped below `requested`, when it did (memory, tasks, an error). */
  stoppedBecause: string | null;
  steps: ScaleStep[];
  targets: TargetCheck[];
}

/** Issue 18's targets at 1,000 containers; judged at every step. */
export const SCALE_TARGETS = {
  listP50Ms: 10,
  statusP50Ms: 2,
  listContainerStatsP50Ms: 100,
  rssMiB: 150,
  /** exec → first Version and first ListContainers answer, p50. */
  startupMs: 500,
  /** Node CPU (shim + dockerd) under kubelet's polling, net of idle. */
  kubeletLoopCpuMsPer30s: 1000,
} as const;

/** The rows of bench/reads.ts judged as lists, and as single-object status calls. */
const LIST_CALLS = new Set(['ListPodSandbox', 'ListPodSandbox (state=ready)', 'ListContainers', 'ListContainers (state=running, label selector)', 'ListContainers (pod_sandbox_id)']);
const STATUS_CALLS = new Set(['PodSandboxStatus', 'ContainerStatus']);

/** The limit a read row is judged against, if any. */
export function readTargetMs(call: string): number | undefined {
  if (LIST_CALLS.has(call)) return SCALE_TARGETS.listP50Ms;
  if (STATUS_CALLS.has(call)) return SCALE_TARGETS.statusP50Ms;
  if (call === 'ListContainerStats') return SCALE_TARGETS.listContainerStatsP50Ms;
  return undefined;
}

/** The counts (containers) the run populates to, in order: the usual steps below `containers`, then it. */
export function scaleSteps(containers: number, usual: readonly number[] = [200, 500, 1000]): number[] {
  if (!Number.isInteger(containers) || containers <= 0) throw new Error(`containers: a positive whole number, not ${containers}`);
  const even = containers + (containers % 2);
  return [...usual.filter((n) => n < even), even];
}

/** One resource a pod uses some of: what is free, what must stay free, and a pod's share. */
export interface Headroom {
  name: string;
  available: number;
  reserve: number;
  perPod: number;
}

/** How many more pods fit every headroom, and which one limits it. */
export function podsThatFit(headrooms: readonly Headroom[]): { pods: number; limitedBy: string } {
  let best = { pods: Number.POSITIVE_INFINITY, limitedBy: 'nothing' };
  for (const h of headrooms) {
    const pods = h.perPod > 0 ? Math.max(0, Math.floor((h.available - h.reserve) / h.perPod)) : Number.POSITIVE_INFINITY;
    if (pods < best.pods) best = { pods, limitedBy: h.name };
  }
  return best;
}

const MiB = 1024 * 1024;
const mib = (bytes: number): string => (bytes / MiB).toFixed(1);
const ms = (n: number): string => n.toFixed(2);

export function checkScaleTargets(steps: readonly ScaleStep[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const s of steps) {
    const at = `at ${s.containers} containers`;
    for (const r of s.reads) {
      const limit = readTargetMs(r.call);
      if (limit !== undefined) checks.push({ target: `${r.call} ${at}: p50 <= ${limit} ms`, value: `${ms(r.shim.p50)} ms`, pass: r.shim.p50 <= limit });
    }
    checks.push({ target: `shim RSS under kubelet's loop ${at}: <= ${SCALE_TARGETS.rssMiB} MiB`, value: `${mib(s.shim.rssBytes)} MiB`, pass: s.shim.rssBytes <= SCALE_TARGETS.rssMiB * MiB });
    for (const [call, t] of [
      ['Version', s.startup.version],
      ['ListContainers', s.startup.listContainers],
    ] as const) {
      checks.push({ target: `exec -> first ${call} answer ${at}: p50 <= ${SCALE_TARGETS.startupMs} ms`, value: `${ms(t.p50)} ms (max ${ms(t.max)}, ${t.n} runs)`, pass: t.p50 <= SCALE_TARGETS.startupMs });
    }
    const node = s.kubeletLoop.nodeNetCpuMsPer30s;
    checks.push({ target: `node CPU (shim + dockerd) under kubelet's polling ${at}: <= ${SCALE_TARGETS.kubeletLoopCpuMsPer30s} ms per 30 s`, value: `${node} ms`, pass: node <= SCALE_TARGETS.kubeletLoopCpuMsPer30s });
  }
  return checks;
}

function row(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

/** A figure with its verdict when it has a target. */
function judged(value: number, limit: number | undefined, text: string): string {
  return limit === undefined ? text : `${text} ${value <= limit ? 'PASS' : 'MISS'}`;
}

/** One table, a column per step: each figure next to its target. */
export function renderScaleTable(r: ScaleResult): string {
  const steps = r.steps;
  const lines = [row(['figure', 'target', ...steps.map((s) => `@${s.containers}`)]), row(['---', '---', ...steps.map(() => '---:')])];
  const add = (figure: string, target: string, cell: (s: ScaleStep) => string): void => {
    lines.push(row([figure, target, ...steps.map(cell)]));
  };
  add('Docker containers: all / running (everyone\'s)', '', (s) => `${s.docker.all} / ${s.docker.running}`);
  add('MemAvailable GiB', '', (s) => (s.memAvailableBytes / 2 ** 30).toFixed(1));
  const calls = [...new Set(steps.flatMap((s) => s.reads.map((x) => x.call)))];
  for (const call of calls) {
    const limit = readTargetMs(call);
    add(`${call} p50 ms (raw Docker p50)`, limit === undefined ? '' : `<= ${limit}`, (s) => {
      const x = s.reads.find((y) => y.call === call);
      if (!x) return '';
      return `${judged(x.shim.p50, limit, ms(x.shim.p50))}${x.raw ? ` (${ms(x.raw.p50)})` : ''}`;
    });
  }
  const rpcs = [...new Set(steps.flatMap((s) => s.cpuPerCall.map((c) => c.rpc)))];
  for (const rpc of rpcs) add(`shim CPU ms per ${rpc}`, '', (s) => String(s.cpuPerCall.find((c) => c.rpc === rpc)?.cpuMsPerCall ?? ''));
  add(
    'shim RSS MiB under kubelet\'s loop (right after the per-call reads; peak)',
    `<= ${SCALE_TARGETS.rssMiB}`,
    (s) => `${judged(s.shim.rssBytes, SCALE_TARGETS.rssMiB * MiB, mib(s.shim.rssBytes))} (${s.shim.afterCallsBytes === undefined ? '-' : mib(s.shim.afterCallsBytes)}; ${mib(s.shim.peakBytes)})`,
  );
  add('shim open fds: all / sockets / unbound unix (its Docker connections)', '', (s) => `${s.shim.files.fds} / ${s.shim.files.sockets} / ${s.shim.files.unixUnbound}`);
  add('kubelet loop: shim / dockerd CPU ms net of idle', '', (s) => `${s.kubeletLoop.shim.netCpuMs} / ${s.kubeletLoop.dockerd.netCpuMs} in ${s.kubeletLoop.seconds} s`);
  add('kubelet loop: node CPU ms per 30 s', `<= ${SCALE_TARGETS.kubeletLoopCpuMsPer30s}`, (s) => judged(s.kubeletLoop.nodeNetCpuMsPer30s, SCALE_TARGETS.kubeletLoopCpuMsPer30s, String(s.kubeletLoop.nodeNetCpuMsPer30s)));
  for (const [side, label] of [
    ['withShim', 'shim running (log streams open)'],
    ['withoutShim', 'shim stopped'],
  ] as const) {
    add(`dockerd idle, ${label}: CPU ms per 30 s (median slot / mean)`, '', (s) => `${s.logStreams[side].cpuMsPer30s} / ${Math.round((s.logStreams[side].cpuMs * 30) / s.logStreams[side].seconds)}`);
    add(`dockerd idle, ${label}: RSS MiB / threads`, '', (s) => `${mib(s.logStreams[side].rssBytes)} / ${s.logStreams[side].threads}`);
    add(`dockerd idle, ${label}: fds / sockets / inotify`, '', (s) => `${s.logStreams[side].files.fds} / ${s.logStreams[side].files.sockets} / ${s.logStreams[side].files.inotify}`);
  }
  for (const [call, pick] of [
    ['Version', (s: ScaleStep) => s.startup.version],
    ['ListContainers', (s: ScaleStep) => s.startup.listContainers],
  ] as const) {
    add(`start-up: exec -> first ${call}, ms p50 (max)`, `<= ${SCALE_TARGETS.startupMs}`, (s) => `${judged(pick(s).p50, SCALE_TARGETS.startupMs, ms(pick(s).p50))} (${ms(pick(s).max)})`);
  }
  return lines.join('\n');
}

export function renderScaleHeader(r: ScaleResult): string {
  const m = r.meta;
  const largest = r.steps.at(-1)?.containers ?? 0;
  return [
    `cri-docker-shim scale bench, ${m.date}`,
    `Docker ${m.docker.version} (API ${m.docker.apiVersion}, ${m.docker.storageDriver}, cgroup ${m.docker.cgroupDriver}), kernel ${m.docker.kernel}`,
    `${m.machine.cpuModel}, ${m.machine.cores} cores, ${(m.machine.memoryBytes / 2 ** 30).toFixed(1)} GiB, ${m.machine.os}; node ${m.node}; shim log level ${m.shimLogLevel}`,
    `asked for ${r.requested} containers, measured up to ${largest}${r.stoppedBecause ? ` (stopped: ${r.stoppedBecause})` : ''}; ${m.readIterations} samples per read call and step; took ${m.durationSeconds} s`,
  ].join('\n');
}
