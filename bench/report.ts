// The benchmark's result (the JSON written to bench/results/), the targets of issue 6 checked
// against it, and the Markdown table. Pure.
import { checkIdleTargets, type IdleResult, idleTableCells } from './idle-report';
import type { KubeletLoopResult } from './kubelet-loop';
import { type LatencySummary, ratio } from './stats';
import { checkStreamTargets, renderStreamRows, type StreamsResult } from './streams-report';

export interface LatencyRow {
  /** The CRI call. */
  call: string;
  /** The raw Docker call(s) doing the same work. */
  rawCall: string;
  shim: LatencySummary;
  raw: LatencySummary;
  /** shim p50 / raw p50. */
  ratioP50: number | null;
}

export interface ReadLevel {
  /** Running Docker containers this run made (pause + app containers). */
  containers: number;
  /** What Docker held at the time, this run's and everyone else's (the daemon is shared). */
  docker: { all: number; shimLabelled: number; running: number };
  rows: LatencyRow[];
  /** The shim's CPU per call of each polled or scraped RPC at this level (issue 12). */
  cpuPerCall: CpuPerCallRow[];
}

export interface CpuPerCallRow {
  rpc: string;
  calls: number;
  /** Shim utime + stime per call, ms. */
  cpuMsPerCall: number;
}

/** The shim's and dockerd's CPU under kubelet's polling (bench/kubelet-loop.ts), net of their idle rates. */
export type KubeletLoopRow = KubeletLoopResult;
/**
 * The loop against its floor; `rssBytes`: the floor process's resident size after it (its idle
 * slots last); `collectedRssBytes`: then after one full collection, the shim's idle figure's floor
 * (absent from older results).
 */
export type KubeletLoopFloorRow = KubeletLoopResult & { rssBytes: number; collectedRssBytes?: number };

export interface PollingResult {
  seconds: number;
  containers: number;
  /** Calls per tick, on each side. */
  tick: string;
  /** dockerd CPU during each side's slots, gross (everyone's work on the shared daemon). */
  dockerdCpuMs: { shim: number; raw: number; idle: number };
  /** Wall time of each side's slots together (a slot is 1 s unless its tick overran). */
  wallMs: { shim: number; raw: number; idle: number };
  /** Minus the idle rate over the same wall time: what the loop itself cost dockerd (never below 0). */
  dockerdCpuNetMs: { shim: number; raw: number };
  /** The same from each side's median slot (robust to bursts of others' work), scaled to `seconds`. */
  dockerdCpuMedianNetMs: { shim: number; raw: number };
  /** dockerd CPU of the shim loop / of the raw loop, median estimate net of idle. */
  ratio: number | null;
  /** The shim's own CPU in its slots, and in the idle slots (its background work). */
  shimCpuMs: number;
  shimIdleCpuMs: number;
  tickMs: { shim: LatencySummary; raw: LatencySummary };
  /** Docker API requests per tick, counted by a pass-through in front of the socket. */
  dockerRequests: { ticks: number; shim: RequestCountResult; raw: RequestCountResult };
}

export interface RequestCountResult {
  perTick: number;
  byEndpoint: Record<string, number>;
}

/** Milliseconds from the exec of main.js to each first successful answer, over the runs. */
export interface StartupTimes {
  version: LatencySummary;
  listContainers: LatencySummary;
}

export interface StartupResult {
  /** Containers this run made (pause + app), present in Docker while the shim started. */
  containers: number;
  /** What Docker held at the time, this run's and everyone else's. */
  docker: { all: number; shimLabelled: number; running: number };
  /** Counted execs per build (after the warm-up ones). */
  runs: number;
  /** With the environment a service has (bench/startup.ts); the targets are about these. */
  shim: StartupTimes;
  /** The same build with the bench's own environment, when that holds variables Node acts on at boot. */
  shellEnvironment?: StartupTimes & { label: string };
  /** The same for another build (`--baseline=`), measured taking turns with this one. */
  baseline?: StartupTimes & { label: string };
}

export interface BenchResult {
  meta: {
    date: string;
    mode: 'full' | 'quick';
    run: string;
    node: string;
    docker: { version: string; apiVersion: string; kernel: string; storageDriver: string; cgroupDriver: string };
    machine: { cpuModel: string; cores: number; memoryBytes: number; os: string };
    shimLogLevel: string;
    lifecycleRounds: number;
    readIterations: number;
    durationSeconds: number;
  };
  lifecycle: LatencyRow[];
  /**
   * The raw side's requests relayed by a bare grpc-js server (bench/grpc-floor.ts), against the
   * raw side: the `shim` summary holds the floor's times. Absent from older results.
   */
  lifecycleFloor?: LatencyRow[];
  /** RunPodSandbox and StopPodSandbox on a CNI network (shim side) against Docker's bridge (raw side). */
  network: LatencyRow[];
  reads: ReadLevel[];
  polling: PollingResult;
  kubeletLoop: KubeletLoopRow;
  /**
   * The same loop against a bare grpc-js server answering with the shim's answers, kept
   * (bench/grpc-floor.ts): its `shim` figures are that server's. Absent from older results.
   */
  kubeletLoopFloor?: KubeletLoopFloorRow;
  rss: { idleBytes: number; afterBytes: number; peakBytes: number };
  /** Docker's storage (<root>/<driver>) the run's ImageFsInfo answered for, and the files it holds. */
  imageStore: { dir: string; files: number };
  startup: StartupResult;
  /** Exec and port-forward throughput and CPU per GiB, shim against the docker CLI (bench/streams.ts). */
  streams?: StreamsResult;
  /** Issue 30: an idle node, and the memory after bursts (./idle.ts); absent from older results. */
  idle?: IdleResult;
  targets: TargetCheck[];
}

export interface TargetCheck {
  target: string;
  /** The measured value the target is about, as shown. */
  value: string;
  pass: boolean;
}

export const TARGETS = {
  /** A lifecycle call without a floor row (ExecSync, PodStart): shim/raw p50. */
  lifecycleRatioP50: 1.1,
  /** A lifecycle call with a floor row: the shim's p50 above the floor's, as a share of the floor's (issue 44). */
  lifecycleCostOverFloor: 0.1,
  readRatioP50: 1.0,
  dockerdCpuShare: 1 / 3,
  rssIdleMiB: 70,
  /** From exec to the first successful answer, at p50. */
  startupMs: 300,
  /** The stats and metrics lists at the largest level (100 pods in the full run), at p50. */
  statsListMs: { ListContainerStats: 25, ListPodSandboxStats: 40, ListPodSandboxMetrics: 60 },
  /** The node's CPU (shim + dockerd) under kubelet's polling at 50 pods, per 30 s, net of idle: issue 30's quarter of cri-dockerd's 637 ms (issue 6 had 500). */
  kubeletLoopCpuMsPer30s: 160,
  /** ImageFsInfo at the largest level, on a store of at least `storeFiles` files: whatever its size, no walk on the call's path. */
  imageFsInfo: { p50Ms: 20, cpuMsPerCall: 5, storeFiles: 50_000 },
} as const;

const MiB = 1024 * 1024;

/** Issue 6's targets against a result; reads are judged at the largest level measured. */
export function checkTargets(r: Omit<BenchResult, 'targets'>): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const row of r.lifecycle) checks.push(lifecycleCheck(row, r.lifecycleFloor?.find((f) => f.call === row.call)));
  const top = [...r.reads].sort((a, b) => b.containers - a.containers)[0];
  for (const row of top?.rows ?? []) {
    checks.push({
      target: `${row.call} at ${top!.containers} containers: shim/raw p50 < ${TARGETS.readRatioP50}`,
      value: String(row.ratioP50),
      pass: row.ratioP50 !== null && row.ratioP50 < TARGETS.readRatioP50,
    });
  }
  for (const [call, limit] of Object.entries(TARGETS.statsListMs)) {
    const statsRow = top?.rows.find((row) => row.call === call);
    if (!statsRow) continue;
    checks.push({
      target: `${call} at ${top!.containers} containers: p50 <= ${limit} ms`,
      value: `${statsRow.shim.p50} ms`,
      pass: statsRow.shim.p50 <= limit,
    });
  }
  const fsInfo = TARGETS.imageFsInfo;
  const bigStore = r.imageStore.files >= fsInfo.storeFiles;
  const store = `on a store of ${r.imageStore.files} files (>= ${fsInfo.storeFiles})`;
  const fsRow = top?.rows.find((row) => row.call === 'ImageFsInfo');
  if (fsRow) checks.push({ target: `ImageFsInfo at ${top!.containers} containers ${store}: p50 <= ${fsInfo.p50Ms} ms`, value: `${fsRow.shim.p50} ms`, pass: bigStore && fsRow.shim.p50 <= fsInfo.p50Ms });
  const fsCpu = top?.cpuPerCall.find((c) => c.rpc === 'ImageFsInfo');
  if (fsCpu) checks.push({ target: `ImageFsInfo shim CPU per call ${store}: <= ${fsInfo.cpuMsPerCall} ms`, value: `${fsCpu.cpuMsPerCall} ms`, pass: bigStore && fsCpu.cpuMsPerCall <= fsInfo.cpuMsPerCall });
  const k = r.kubeletLoop;
  checks.push({
    target: `node CPU (shim + dockerd) under kubelet's polling at ${k.pods} pods: <= ${TARGETS.kubeletLoopCpuMsPer30s} ms per 30 s, net of idle`,
    value: `${k.nodeNetCpuMsPer30s} ms`,
    pass: k.nodeNetCpuMsPer30s <= TARGETS.kubeletLoopCpuMsPer30s,
  });
  const cpu = r.polling.dockerdCpuMedianNetMs;
  checks.push({
    target: 'dockerd CPU in the polling loop: shim <= 1/3 of raw (median slot, net of idle)',
    value: `${cpu.shim} / ${cpu.raw} ms = ${r.polling.ratio}`,
    pass: r.polling.ratio !== null && r.polling.ratio <= TARGETS.dockerdCpuShare,
  });
  checks.push({
    target: `shim RSS idle <= ${TARGETS.rssIdleMiB} MiB`,
    value: `${(r.rss.idleBytes / MiB).toFixed(1)} MiB`,
    pass: r.rss.idleBytes <= TARGETS.rssIdleMiB * MiB,
  });
  const st = r.startup;
  for (const [call, times] of [
    ['Version', st.shim.version],
    ['ListContainers', st.shim.listContainers],
  ] as const) {
    checks.push({
      target: `exec -> first ${call} answer at ${st.containers} containers, in a service's environment: p50 <= ${TARGETS.startupMs} ms`,
      value: `${ms(times.p50)} ms (max ${ms(times.max)}, ${times.n} runs)`,
      pass: times.p50 <= TARGETS.startupMs,
    });
  }
  if (r.streams) checks.push(...checkStreamTargets(r.streams));
  if (r.idle) checks.push(...checkIdleTargets(r.idle));
  return checks;
}

/**
 * A lifecycle call against what binds it (bench/README.md's table): the floor, a bare grpc-js
 * hop making the raw side's requests, where the run measured one (the nearest the shim can come
 * to raw, so the shim's cost is what it adds above it); else the raw Docker calls.
 */
function lifecycleCheck(row: LatencyRow, floor: LatencyRow | undefined): TargetCheck {
  if (!floor) {
    return {
      target: `${row.call}: shim/raw p50 <= ${TARGETS.lifecycleRatioP50} (no floor measured)`,
      value: String(row.ratioP50),
      pass: row.ratioP50 !== null && row.ratioP50 <= TARGETS.lifecycleRatioP50,
    };
  }
  const floorP50 = floor.shim.p50;
  const cost = floorP50 > 0 ? (row.shim.p50 - floorP50) / floorP50 : null;
  return {
    target: `${row.call}: shim p50 above the floor's <= ${TARGETS.lifecycleCostOverFloor * 100}% of the floor's`,
    value: `${ms(row.shim.p50)} vs ${ms(floorP50)} ms (raw ${ms(row.raw.p50)}): ${cost === null ? 'n/a' : `${cost >= 0 ? '+' : ''}${(cost * 100).toFixed(1)}%`}`,
    pass: cost !== null && cost <= TARGETS.lifecycleCostOverFloor,
  };
}

/** The start-up rows: p50 / max of each build, next to the target. */
function startupRows(st: StartupResult): string[] {
  const sides: Array<[string, StartupTimes]> = [["this build, a service's environment", st.shim]];
  if (st.shellEnvironment) sides.push([st.shellEnvironment.label, st.shellEnvironment]);
  if (st.baseline) sides.push([st.baseline.label, st.baseline]);
  const rows: string[] = [];
  for (const [label, times] of sides) {
    for (const [call, t] of [
      ['Version', times.version],
      ['ListContainers', times.listContainers],
    ] as const) {
      rows.push(
        row([
          `startup @${st.containers}`,
          `exec -> first ${call} answer, ms p50 / max (${t.n} runs; ${label})`,
          `target: p50 <= ${TARGETS.startupMs}`,
          `${ms(t.p50)} / ${ms(t.max)}`,
          '',
          '',
          '',
          '',
        ]),
      );
    }
  }
  return rows;
}

const ms = (n: number): string => n.toFixed(2);
const ratioText = (n: number | null): string => (n === null ? 'n/a' : n.toFixed(2));

function row(cells: Array<string | number>): string {
  return `| ${cells.join(' | ')} |`;
}

/** The one table: latencies in ms (p50 / p95), then the polling loop's CPU and the RSS. */
export function renderTable(r: BenchResult): string {
  const lines = [
    row(['part', 'call', 'raw Docker call', 'shim p50', 'shim p95', 'raw p50', 'raw p95', 'shim/raw p50']),
    row(['---', '---', '---', '---:', '---:', '---:', '---:', '---:']),
  ];
  for (const l of r.lifecycle) {
    lines.push(row(['lifecycle', l.call, l.rawCall, ms(l.shim.p50), ms(l.shim.p95), ms(l.raw.p50), ms(l.raw.p95), ratioText(l.ratioP50)]));
  }
  for (const l of r.lifecycleFloor ?? []) {
    lines.push(row(['lifecycle floor', l.call, `${l.rawCall}, relayed by a bare grpc-js server`, ms(l.shim.p50), ms(l.shim.p95), ms(l.raw.p50), ms(l.raw.p95), ratioText(l.ratioP50)]));
  }
  for (const l of r.network) {
    lines.push(row(['pod network', l.call, l.rawCall, ms(l.shim.p50), ms(l.shim.p95), ms(l.raw.p50), ms(l.raw.p95), ratioText(l.ratioP50)]));
  }
  for (const level of r.reads) {
    for (const l of level.rows) {
      lines.push(
        row([`reads @${level.containers}`, l.call, l.rawCall, ms(l.shim.p50), ms(l.shim.p95), ms(l.raw.p50), ms(l.raw.p95), ratioText(l.ratioP50)]),
      );
    }
  }
  const p = r.polling;
  lines.push(
    row([
      `polling ${p.seconds} s @${p.containers}`,
      'dockerd CPU ms (gross; idle ' + p.dockerdCpuMs.idle + ')',
      p.tick,
      String(p.dockerdCpuMs.shim),
      '',
      String(p.dockerdCpuMs.raw),
      '',
      '',
    ]),
    row([`polling ${p.seconds} s @${p.containers}`, 'dockerd CPU ms (sum net of idle)', '', String(p.dockerdCpuNetMs.shim), '', String(p.dockerdCpuNetMs.raw), '', ratioText(ratio(p.dockerdCpuNetMs.shim, p.dockerdCpuNetMs.raw))]),
    row([`polling ${p.seconds} s @${p.containers}`, 'dockerd CPU ms (median slot net of idle)', '', String(p.dockerdCpuMedianNetMs.shim), '', String(p.dockerdCpuMedianNetMs.raw), '', ratioText(p.ratio)]),
    row([`polling ${p.seconds} s @${p.containers}`, `shim CPU ms (idle slots: ${p.shimIdleCpuMs})`, '', String(p.shimCpuMs), '', '', '', '']),
    row([`polling ${p.seconds} s @${p.containers}`, 'tick ms', '', ms(p.tickMs.shim.p50), ms(p.tickMs.shim.p95), ms(p.tickMs.raw.p50), ms(p.tickMs.raw.p95), ratioText(p.tickMs.raw.p50 > 0 ? Math.round((p.tickMs.shim.p50 / p.tickMs.raw.p50) * 1000) / 1000 : null)]),
    row([
      `polling @${p.containers}`,
      `Docker API requests per tick (counted over ${p.dockerRequests.ticks} ticks)`,
      '',
      String(p.dockerRequests.shim.perTick),
      '',
      String(p.dockerRequests.raw.perTick),
      '',
      ratioText(ratio(p.dockerRequests.shim.perTick, p.dockerRequests.raw.perTick)),
    ]),
    row([
      `kubelet loop ${r.kubeletLoop.seconds} s @${r.kubeletLoop.pods} pods`,
      `CPU ms, shim and dockerd: loop / idle / net of idle (target: node net <= ${TARGETS.kubeletLoopCpuMsPer30s} per 30 s)`,
      "kubelet's pollers at their rates (bench/README.md)",
      `shim ${r.kubeletLoop.shim.loopCpuMs} / ${r.kubeletLoop.shim.idleCpuMs} / ${r.kubeletLoop.shim.netCpuMs}; dockerd ${r.kubeletLoop.dockerd.loopCpuMs} / ${r.kubeletLoop.dockerd.idleCpuMs} / ${r.kubeletLoop.dockerd.netCpuMs}; node ${r.kubeletLoop.nodeNetCpuMsPer30s} per 30 s`,
      '',
      '',
      '',
      '',
    ]),
    ...(r.kubeletLoopFloor ? [kubeletLoopFloorRow(r.kubeletLoopFloor)] : []),
    ...r.reads.filter((level) => level.cpuPerCall.length > 0).map((level) =>
      row([`shim CPU per call @${level.containers}`, 'ms per call', level.cpuPerCall.map((c) => c.rpc).join(', '), level.cpuPerCall.map((c) => c.cpuMsPerCall).join(' / '), '', '', '', '']),
    ),
    row(['shim', 'RSS MiB: idle / after the run / peak', '', [r.rss.idleBytes, r.rss.afterBytes, r.rss.peakBytes].map((b) => (b / MiB).toFixed(1)).join(' / '), '', '', '', '']),
    ...startupRows(r.startup),
    ...(r.streams ? renderStreamRows(r.streams) : []),
    ...(r.idle ? idleTableCells(r.idle).map(row) : []),
  );
  return lines.join('\n');
}

/** The loop's floor: what the bare grpc-js server cost, per 30 s like the node's figure. */
function kubeletLoopFloorRow(f: KubeletLoopFloorRow): string {
  const per30s = f.seconds > 0 ? Math.round((f.shim.netCpuMs * 30) / f.seconds) : 0;
  return row([
    `kubelet loop floor ${f.seconds} s @${f.pods} pods`,
    'CPU ms of a bare grpc-js server with the shim\'s answers kept: loop / idle / net of idle; its RSS after (after a full collection)',
    'the same calls, no cache, stats or Docker (bench/grpc-floor.ts)',
    `${f.shim.loopCpuMs} / ${f.shim.idleCpuMs} / ${f.shim.netCpuMs}; ${per30s} per 30 s; RSS ${(f.rssBytes / MiB).toFixed(1)} MiB${f.collectedRssBytes === undefined ? '' : ` (${(f.collectedRssBytes / MiB).toFixed(1)} MiB)`}`,
    '',
    '',
    '',
    '',
  ]);
}

export function renderTargets(checks: readonly TargetCheck[]): string {
  return checks.map((c) => `${c.pass ? 'PASS' : 'MISS'}  ${c.target}: ${c.value}`).join('\n');
}

export function renderHeader(r: BenchResult): string {
  const m = r.meta;
  return [
    `cri-docker-shim benchmark (${m.mode}), ${m.date}`,
    `Docker ${m.docker.version} (API ${m.docker.apiVersion}, ${m.docker.storageDriver}, cgroup ${m.docker.cgroupDriver}), kernel ${m.docker.kernel}`,
    `${m.machine.cpuModel}, ${m.machine.cores} cores, ${(m.machine.memoryBytes / 2 ** 30).toFixed(1)} GiB, ${m.machine.os}; node ${m.node}; shim log level ${m.shimLogLevel}`,
    `${m.lifecycleRounds} lifecycle rounds, ${m.readIterations} samples per read call and level, ${r.startup.runs} start-up execs per build; took ${m.durationSeconds} s`,
  ].join('\n');
}
