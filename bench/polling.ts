// Part 3: a kubelet-like polling loop at the full population, once through the shim and once
// with the raw Docker calls, measuring what it costs dockerd (and the shim) in CPU time.
// Every second: list sandboxes, list containers, list images, and the status of 10 objects
// (5 pods' sandboxes and their 5 containers), as PLEG's relist and the status manager do.
import type Dockerode from 'dockerode';
import { CONTAINER_TYPE_LABEL, TYPE_CONTAINER, TYPE_SANDBOX } from '../src/shim/labels';
import type { CriClient } from '../test/support/client';
import type { PopulatedPod } from './reads';
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

/**
 * Runs `tick` once a second for `seconds` seconds (a tick that overruns delays the next one,
 * as a kubelet's ticker would drop it) and returns how long each tick took. The loop always
 * lasts the full `seconds`, so the CPU figures of different loops cover the same wall time.
 */
export async function pollFor(seconds: number, tick: () => Promise<void>): Promise<number[]> {
  const start = Date.now();
  const tickMs: number[] = [];
  for (let i = 0; i < seconds; i++) {
    await pace(start + i * 1000);
    if (Date.now() >= start + seconds * 1000) break;
    tickMs.push((await timed(tick)).ms);
  }
  await pace(start + seconds * 1000);
  return tickMs;
}

/** Waits until the wall clock reaches `at` (pacing the loop; nothing is being waited for). */
function pace(at: number): Promise<void> {
  const ms = at - Date.now();
  return ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve();
}
