// Part 3: a kubelet-like polling loop at the full population, once through the shim and once
// with the raw Docker calls, measuring what it costs dockerd (and the shim) in CPU time.
// Every second: list sandboxes, list containers, list images, and the status of 10 objects
// (5 pods' sandboxes and their 5 containers), as PLEG's relist and the status manager do.
import type Dockerode from 'dockerode';
import { CONTAINER_TYPE_LABEL, TYPE_CONTAINER, TYPE_SANDBOX } from '../src/conventions/labels';
import type { CriClient } from '../test/support/client';
import type { PopulatedPod } from './reads';
import { cpuMs } from './procfs';
import type { RequestCounter } from './request-counter';
import { percentile } from './stats';
import { timed } from './workload';

/** Objects whose status each tick asks for (pods; each gives a sandbox and a container). */
export const STATUS_PODS_PER_TICK = 5;

export async function shimTick(client: CriClient, pods: readonly PopulatedPod[]): Promise<void> {
  await client.runtime.ListPodSandbox({});
  await client.runtime.ListContainers({});
  await client.images.ListImages({});
  for (const p of pods.slice(0, STATUS_PODS_PER_TICK)) {
    await client.runtime.PodSandboxStatus({ podSandboxId: p.pod.id });
    await client.runtime.ContainerStatus({ containerId: p.containerId });
  }
}

export async function rawTick(docker: Dockerode, pods: readonly PopulatedPod[]): Promise<void> {
  await docker.listContainers({ all: true, filters: { label: [`${CONTAINER_TYPE_LABEL}=${TYPE_SANDBOX}`] } });
  await docker.listContainers({ all: true, filters: { label: [`${CONTAINER_TYPE_LABEL}=${TYPE_CONTAINER}`] } });
  await docker.listImages({ digests: true });
  for (const p of pods.slice(0, STATUS_PODS_PER_TICK)) {
    await docker.getContainer(p.pod.id).inspect();
    await docker.getContainer(p.containerId).inspect();
  }
}

export interface Side {
  name: string;
  /** One tick's calls; for the idle side, nothing. */
  tick: () => Promise<void>;
}

export interface SideTotals {
  /** CPU milliseconds each watched process used during this side's slots. */
  cpuMs: number[];
  /** The same slot by slot: slotCpuMs[pid index][slot]. */
  slotCpuMs: number[][];
  /** Wall milliseconds of this side's slots together. */
  wallMs: number;
  /** How long each tick's calls took. */
  tickMs: number[];
}

/**
 * `seconds` one-second slots per side, the sides taking turns slot by slot (the order
 * rotating each round), with the CPU time of `pids` read around every slot. Taking turns
 * matters on a shared machine: other work on dockerd (other test runs) then falls on every
 * side alike instead of on whichever loop happened to run during it, and subtracting the idle
 * side leaves what each loop itself cost. A tick that overruns its second makes its slot
 * longer; the wall time is recorded so the idle rate can be scaled to it. `readCpuMs`: how a
 * process's CPU time is read (by default /proc/<pid>/stat's, in clock ticks).
 */
export async function pollInTurns(seconds: number, sides: readonly Side[], pids: readonly number[], readCpuMs: (pid: number) => number = cpuMs): Promise<SideTotals[]> {
  const totals: SideTotals[] = sides.map(() => ({ cpuMs: pids.map(() => 0), slotCpuMs: pids.map(() => []), wallMs: 0, tickMs: [] }));
  for (let round = 0; round < seconds; round++) {
    for (let k = 0; k < sides.length; k++) {
      const index = (round + k) % sides.length;
      const side = sides[index]!;
      const total = totals[index]!;
      const slotStart = Date.now();
      const before = pids.map(readCpuMs);
      total.tickMs.push((await timed(side.tick)).ms);
      await pace(slotStart + 1000);
      const after = pids.map(readCpuMs);
      after.forEach((a, i) => {
        total.cpuMs[i]! += a - before[i]!;
        total.slotCpuMs[i]!.push(a - before[i]!);
      });
      total.wallMs += Date.now() - slotStart;
    }
  }
  for (const t of totals) t.cpuMs = t.cpuMs.map((c) => Math.round(c));
  return totals;
}

/** Waits until the wall clock reaches `at` (pacing the loop; nothing is being waited for). */
function pace(at: number): Promise<void> {
  const ms = at - Date.now();
  return ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve();
}

/** CPU used beyond the idle rate over the same wall time; never below 0. */
export function netOfIdle(cpuMs: number, wallMs: number, idleCpuMs: number, idleWallMs: number): number {
  if (idleWallMs <= 0) return cpuMs;
  return Math.max(0, Math.round(cpuMs - (idleCpuMs * wallMs) / idleWallMs));
}

/**
 * The same estimate from the median slot of each side: a burst of someone else's work on the
 * shared daemon lands in a few slots and moves a median far less than a sum. Scaled back to
 * `slots` slots; never below 0.
 */
export function medianNetOfIdle(sideSlots: readonly number[], idleSlots: readonly number[], slots: number): number {
  if (sideSlots.length === 0) return 0;
  const idle = idleSlots.length > 0 ? percentile(idleSlots, 0.5) : 0;
  return Math.max(0, Math.round((percentile(sideSlots, 0.5) - idle) * slots));
}

export interface RequestCount {
  /** Docker API requests per tick (over whole one-second slots, so background requests count). */
  perTick: number;
  byEndpoint: Record<string, number>;
}

/**
 * Counts the Docker requests of `ticks` paced ticks after `warmup` uncounted ones (a shim
 * that fills a cache on its first calls is judged on its steady state).
 */
export async function countRequests(counter: RequestCounter, tick: () => Promise<void>, ticks: number, warmup: number): Promise<RequestCount> {
  for (let i = 0; i < warmup; i++) await tick();
  counter.reset();
  const start = Date.now();
  for (let i = 0; i < ticks; i++) {
    await pace(start + i * 1000);
    await tick();
  }
  await pace(start + ticks * 1000);
  const byEndpoint = counter.snapshot();
  const total = Object.values(byEndpoint).reduce((a, b) => a + b, 0);
  return { perTick: Math.round((total / ticks) * 10) / 10, byEndpoint };
}
