// Part 3b: the shim's own CPU under the polling kubelet does (issue 12). Every second both
// List calls and 10 status calls (5 pods' sandboxes and containers), every 10 seconds both
// stats lists, as PLEG, the status manager and the stats provider do. Measured on the shim's
// utime+stime from /proc, never wall time: the machine is shared, and CPU time is what the
// node pays. Loop slots and idle slots take turns, so the idle rate is read under the same load.
import type { CriClient } from '../test/support/client';
import type { PopulatedPod } from './reads';
import { cpuMs } from './procfs';
import { medianNetOfIdle, pollInTurns, type SideTotals } from './polling';

/** Pods whose status each tick asks for (a sandbox and a container each: 10 calls). */
export const KUBELET_STATUS_PODS = 5;
/** Seconds between the two stats lists, as kubelet's housekeeping asks for them. */
export const KUBELET_STATS_EVERY = 10;

export const POLLED_RPCS = [
  'ListPodSandbox',
  'ListContainers',
  'PodSandboxStatus',
  'ContainerStatus',
  'ListContainerStats',
  'ListPodSandboxStats',
] as const;
/** Version does no work of ours: its CPU per call is grpc-js's own floor, for comparison. */
export const FLOOR_RPC = 'Version';
export type PolledRpc = (typeof POLLED_RPCS)[number] | typeof FLOOR_RPC;

/** One call of `rpc`; status calls go round-robin over the pods by `i`. */
export function callPolled(client: CriClient, pods: readonly PopulatedPod[], rpc: PolledRpc, i: number): Promise<unknown> {
  const p = pods[i % pods.length];
  switch (rpc) {
    case 'Version':
      return client.runtime.Version({});
    case 'ListPodSandbox':
      return client.runtime.ListPodSandbox({});
    case 'ListContainers':
      return client.runtime.ListContainers({});
    case 'PodSandboxStatus':
      if (!p) throw new Error('PodSandboxStatus needs a pod');
      return client.runtime.PodSandboxStatus({ podSandboxId: p.pod.id });
    case 'ContainerStatus':
      if (!p) throw new Error('ContainerStatus needs a pod');
      return client.runtime.ContainerStatus({ containerId: p.containerId });
    case 'ListContainerStats':
      return client.runtime.ListContainerStats({});
    case 'ListPodSandboxStats':
      return client.runtime.ListPodSandboxStats({});
  }
}

/** The calls of second `second` of the loop. */
export async function kubeletSecond(client: CriClient, pods: readonly PopulatedPod[], second: number): Promise<void> {
  await client.runtime.ListPodSandbox({});
  await client.runtime.ListContainers({});
  for (let k = 0; k < KUBELET_STATUS_PODS && pods.length > 0; k++) {
    const i = second * KUBELET_STATUS_PODS + k;
    await callPolled(client, pods, 'PodSandboxStatus', i);
    await callPolled(client, pods, 'ContainerStatus', i);
  }
  if (second % KUBELET_STATS_EVERY === 0) {
    await Promise.all([client.runtime.ListContainerStats({}), client.runtime.ListPodSandboxStats({})]);
  }
}

export interface KubeletLoopResult {
  pods: number;
  seconds: number;
  /** Shim CPU ms in the loop's slots and in as many idle slots. */
  loopCpuMs: number;
  idleCpuMs: number;
  /** (median loop slot − median idle slot) × seconds, the stats lists' slots added in full. */
  netCpuMs: number;
}

/**
 * `seconds` loop slots and as many idle slots, taking turns. The stats lists run in every
 * tenth loop slot only, so a median would leave them out: those slots are added as they are.
 */
export async function measureKubeletLoop(client: CriClient, pods: readonly PopulatedPod[], shimPid: number, seconds: number): Promise<KubeletLoopResult> {
  let second = 0;
  const [loop, idle] = (await pollInTurns(
    seconds,
    [
      { name: 'kubelet', tick: () => kubeletSecond(client, pods, second++) },
      { name: 'idle', tick: async () => undefined },
    ],
    [shimPid],
  )) as [SideTotals, SideTotals];
  const loopSlots = loop.slotCpuMs[0]!;
  const idleSlots = idle.slotCpuMs[0]!;
  const statsSlots = loopSlots.filter((_c, i) => i % KUBELET_STATS_EVERY === 0);
  const plainSlots = loopSlots.filter((_c, i) => i % KUBELET_STATS_EVERY !== 0);
  const plainNet = medianNetOfIdle(plainSlots, idleSlots, plainSlots.length);
  const statsNet = statsSlots.reduce((a, b) => a + b, 0) - medianOf(idleSlots) * statsSlots.length;
  return {
    pods: pods.length,
    seconds,
    loopCpuMs: loop.cpuMs[0]!,
    idleCpuMs: idle.cpuMs[0]!,
    netCpuMs: Math.max(0, Math.round(plainNet + statsNet)),
  };
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
 * them (the clock tick is 10 ms, so the calls must add up to many ticks), after `warmup` calls.
 */
export async function cpuPerCall(client: CriClient, pods: readonly PopulatedPod[], shimPid: number, rpcs: readonly PolledRpc[], calls: number, warmup: number): Promise<CpuPerCall[]> {
  const out: CpuPerCall[] = [];
  for (const rpc of rpcs) {
    if ((rpc === 'PodSandboxStatus' || rpc === 'ContainerStatus') && pods.length === 0) continue;
    for (let i = 0; i < warmup; i++) await callPolled(client, pods, rpc, i);
    const before = cpuMs(shimPid);
    for (let i = 0; i < calls; i++) await callPolled(client, pods, rpc, i);
    const used = cpuMs(shimPid) - before;
    out.push({ rpc, calls, cpuMsPerCall: Math.round((used / calls) * 1000) / 1000 });
  }
  return out;
}
