// Part 3b: the node's CPU (the shim's and dockerd's) under what kubelet asks of its runtime, at
// kubelet's own rates (issue 18): KUBELET_POLLERS below, read from kubelet's code and listed
// with their sources in bench/README.md. Measured on the threads' CPU time from /proc (to the
// nanosecond, ./procfs.ts preciseCpuMs), never wall time: the machine is shared, and CPU time
// is what the node pays. Loop slots and idle slots take turns, so the idle rate is read under
// the same load.
import type { CriClient } from '../test/support/client';
import type { PopulatedPod } from './reads';
import { preciseCpuMs } from './procfs';
import { pollInTurns, type SideTotals } from './polling';

/** A call kubelet makes, with the request it sends. */
export type KubeletCall =
  | 'ListPodSandbox'
  | 'ListPodSandbox(ready)'
  | 'ListContainers'
  | 'ListContainers(running)'
  | 'ListContainerStats'
  | 'ListImages'
  | 'ImageFsInfo'
  | 'Status'
  | 'Version';

/** One periodic part of kubelet (1.3x, default feature gates) and what it asks each round. */
export interface KubeletPoller {
  name: string;
  everySeconds: number;
  calls: readonly KubeletCall[];
}

/**
 * Everything kubelet polls on a node in steady state (no pod changing, no exec probes), with
 * metrics-server scraping /metrics/resource. Status, PodSandboxStatus and ContainerStatus of a
 * pod come only when PLEG sees it change, so not here. bench/README.md gives each one's source.
 */
export const KUBELET_POLLERS: readonly KubeletPoller[] = [
  { name: 'PLEG relist', everySeconds: 1, calls: ['ListPodSandbox', 'ListContainers'] },
  { name: 'housekeeping (pod cleanups)', everySeconds: 2, calls: ['ListPodSandbox(ready)', 'ListContainers(running)'] },
  { name: 'runtime status', everySeconds: 5, calls: ['Status'] },
  { name: 'node status', everySeconds: 10, calls: ['Version'] },
  // The CRI stats provider's getPodAndContainerMaps lists the containers first, then the sandboxes.
  { name: 'eviction manager (stats summary)', everySeconds: 10, calls: ['ImageFsInfo', 'ListContainers', 'ListPodSandbox', 'ListContainerStats'] },
  { name: 'metrics-server (/metrics/resource)', everySeconds: 15, calls: ['ListContainers', 'ListPodSandbox', 'ListContainerStats'] },
  { name: 'image manager (image list)', everySeconds: 30, calls: ['ListImages'] },
  { name: 'container GC', everySeconds: 60, calls: ['ListContainers', 'ListPodSandbox', 'ListContainers'] },
  { name: 'image GC', everySeconds: 300, calls: ['ListImages', 'ListPodSandbox', 'ListContainers', 'ImageFsInfo'] },
];

export function callKubelet(client: CriClient, call: KubeletCall): Promise<unknown> {
  switch (call) {
    case 'ListPodSandbox':
      return client.runtime.ListPodSandbox({});
    case 'ListPodSandbox(ready)':
      return client.runtime.ListPodSandbox({ filter: { state: { state: 'SANDBOX_READY' } } });
    case 'ListContainers':
      return client.runtime.ListContainers({});
    case 'ListContainers(running)':
      return client.runtime.ListContainers({ filter: { state: { state: 'CONTAINER_RUNNING' } } });
    case 'ListContainerStats':
      return client.runtime.ListContainerStats({});
    case 'ListImages':
      return client.images.ListImages({});
    case 'ImageFsInfo':
      return client.images.ImageFsInfo({});
    case 'Status':
      return client.runtime.Status({});
    case 'Version':
      return client.runtime.Version({});
  }
}

/** The pollers due in second `second` of the loop: each first runs at the end of its first period, as after kubelet's start. */
export function pollersDue(second: number): KubeletPoller[] {
  return KUBELET_POLLERS.filter((p) => (second + 1) % p.everySeconds === 0);
}

/** Second `second` of the loop: the pollers due, side by side (kubelet runs each in its own goroutine), each one's calls in order. */
export async function kubeletSecond(client: CriClient, second: number): Promise<void> {
  await Promise.all(
    pollersDue(second).map(async (poller) => {
      for (const call of poller.calls) await callKubelet(client, call);
    }),
  );
}

/**
 * `seconds` seconds of the loop, one a second, not measured: a fresh process's code is not yet
 * compiled and optimised as a shim's that has served for minutes is (V8 still optimises for the
 * first minute of the loop alone).
 */
export async function warmUpLoop(client: CriClient, seconds: number): Promise<void> {
  for (let s = 0; s < seconds; s++) await Promise.all([kubeletSecond(client, s), new Promise((resolve) => setTimeout(resolve, 1000))]);
}

/** The calls the loop makes in `seconds` seconds, by call. */
export function kubeletCallCounts(seconds: number): Partial<Record<KubeletCall, number>> {
  const out: Partial<Record<KubeletCall, number>> = {};
  for (let s = 0; s < seconds; s++) for (const p of pollersDue(s)) for (const c of p.calls) out[c] = (out[c] ?? 0) + 1;
  return out;
}

export const POLLED_RPCS = [
  'ListPodSandbox',
  'ListContainers',
  'PodSandboxStatus',
  'ContainerStatus',
  'ListContainerStats',
  'ListPodSandboxStats',
  'ImageFsInfo',
  'ListImages',
  'Status',
] as const;
/** Version does no work of ours: its CPU per call is grpc-js's own floor, for comparison. */
export const FLOOR_RPC = 'Version';
/** kubelet's /metrics/cadvisor scrape when its PodAndContainerStatsFromCRI gate is on: not part of the default loop. */
export const SCRAPE_RPC = 'ListPodSandboxMetrics';
export type PolledRpc = (typeof POLLED_RPCS)[number] | typeof FLOOR_RPC | typeof SCRAPE_RPC;
/** Every RPC whose CPU per call the bench reports, the floor first. */
export const CPU_PER_CALL_RPCS: readonly PolledRpc[] = [FLOOR_RPC, ...POLLED_RPCS, SCRAPE_RPC];

/** One call of `rpc`; status calls go round-robin over the pods by `i`. */
export function callPolled(client: CriClient, pods: readonly PopulatedPod[], rpc: PolledRpc, i: number): Promise<unknown> {
  const p = pods[i % pods.length];
  switch (rpc) {
    case 'PodSandboxStatus':
      if (!p) throw new Error('PodSandboxStatus needs a pod');
      return client.runtime.PodSandboxStatus({ podSandboxId: p.pod.id });
    case 'ContainerStatus':
      if (!p) throw new Error('ContainerStatus needs a pod');
      return client.runtime.ContainerStatus({ containerId: p.containerId });
    case 'ListPodSandboxStats':
      return client.runtime.ListPodSandboxStats({});
    case 'ListPodSandboxMetrics':
      return client.runtime.ListPodSandboxMetrics({});
    default:
      return callKubelet(client, rpc);
  }
}

/** One process's CPU in the loop's slots and in as many idle slots, ms. */
export interface ProcessLoopCpu {
  loopCpuMs: number;
  idleCpuMs: number;
  /** Every loop slot net of the median idle slot, summed: what the loop cost the process. */
  netCpuMs: number;
}

export interface KubeletLoopResult {
  pods: number;
  seconds: number;
  shim: ProcessLoopCpu;
  dockerd: ProcessLoopCpu;
  /** (shim + dockerd net) scaled to 30 s. */
  nodeNetCpuMsPer30s: number;
}

/**
 * `seconds` loop slots and as many idle slots, taking turns, with the shim's and dockerd's CPU
 * read around each. The slots' loads differ (most seconds hold one relist, some every poller),
 * so every loop slot counts, each net of the median idle slot.
 */
export async function measureKubeletLoop(client: CriClient, pods: readonly PopulatedPod[], pids: { shim: number; dockerd: number }, seconds: number): Promise<KubeletLoopResult> {
  let second = 0;
  const [loop, idle] = (await pollInTurns(
    seconds,
    [
      { name: 'kubelet', tick: () => kubeletSecond(client, second++) },
      { name: 'idle', tick: async () => undefined },
    ],
    [pids.shim, pids.dockerd],
    preciseCpuMs,
  )) as [SideTotals, SideTotals];
  const of = (i: number): ProcessLoopCpu => {
    const idleMedian = medianOf(idle.slotCpuMs[i]!);
    const net = loop.slotCpuMs[i]!.reduce((sum, slot) => sum + slot - idleMedian, 0);
    return { loopCpuMs: loop.cpuMs[i]!, idleCpuMs: idle.cpuMs[i]!, netCpuMs: Math.max(0, Math.round(net)) };
  };
  const shim = of(0);
  const dockerd = of(1);
  return { pods: pods.length, seconds, shim, dockerd, nodeNetCpuMsPer30s: seconds > 0 ? Math.round(((shim.netCpuMs + dockerd.netCpuMs) * 30) / seconds) : 0 };
}

function medianOf(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const mid = (s.length - 1) / 2;
  return (s[Math.floor(mid)]! + s[Math.ceil(mid)]!) / 2;
}

export interface CpuPerCall {
  rpc: PolledRpc;
  calls: number;
  /** Shim CPU (user + system) per call, ms. */
  cpuMsPerCall: number;
}

/**
 * The shim's CPU per call of each polled RPC: `calls` calls back to back, CPU read around
 * them, after `warmup` calls.
 */
export async function cpuPerCall(client: CriClient, pods: readonly PopulatedPod[], shimPid: number, rpcs: readonly PolledRpc[], calls: number, warmup: number): Promise<CpuPerCall[]> {
  const out: CpuPerCall[] = [];
  for (const rpc of rpcs) {
    if ((rpc === 'PodSandboxStatus' || rpc === 'ContainerStatus') && pods.length === 0) continue;
    for (let i = 0; i < warmup; i++) await callPolled(client, pods, rpc, i);
    const before = preciseCpuMs(shimPid);
    for (let i = 0; i < calls; i++) await callPolled(client, pods, rpc, i);
    const used = preciseCpuMs(shimPid) - before;
    out.push({ rpc, calls, cpuMsPerCall: Math.round((used / calls) * 1000) / 1000 });
  }
  return out;
}

/**
 * The shim's CPU per call at kubelet's spacing: `calls` calls of each RPC in one-second slots
 * taking turns with as many idle slots (pollInTurns), every slot's CPU read around it; per call,
 * the mean call slot less the median idle slot. kubelet calls at most once a second, and such a
 * call costs more than one of `cpuPerCall`'s back to back (caches and branch predictors gone
 * cold while the process slept): this is the figure the loop pays.
 */
export async function cpuPerSparseCall(client: CriClient, pods: readonly PopulatedPod[], shimPid: number, rpcs: readonly PolledRpc[], calls: number): Promise<CpuPerCall[]> {
  const out: CpuPerCall[] = [];
  for (const rpc of rpcs) {
    if ((rpc === 'PodSandboxStatus' || rpc === 'ContainerStatus') && pods.length === 0) continue;
    let round = 0;
    const [called, idle] = (await pollInTurns(
      calls,
      [
        { name: rpc, tick: async () => void (await callPolled(client, pods, rpc, round++)) },
        { name: 'idle', tick: async () => undefined },
      ],
      [shimPid],
      preciseCpuMs,
    )) as [SideTotals, SideTotals];
    const callSlots = called.slotCpuMs[0]!;
    const mean = callSlots.reduce((a, b) => a + b, 0) / Math.max(1, callSlots.length);
    out.push({ rpc, calls, cpuMsPerCall: Math.round((mean - medianOf(idle.slotCpuMs[0]!)) * 1000) / 1000 });
  }
  return out;
}
