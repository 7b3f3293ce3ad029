// Part 2: the read calls kubelet makes all the time, at a given number of running
// containers, each next to the Docker call it would otherwise take. The node is populated
// through the shim (its reads only see containers with its labels).
import type Dockerode from 'dockerode';
import { CONTAINER_TYPE_LABEL, SANDBOX_ID_LABEL, TYPE_CONTAINER, TYPE_SANDBOX } from '../src/conventions/labels';
import type { CriClient } from '../test/support/client';
import { TEST_LABEL } from '../test/support/cleanup';
import { TEST_BUSYBOX_IMAGE } from '../test/support/images';
import { mapLimit } from '../test/support/map-limit';
import { type BenchRun, inTurn, POPULATION_COMMAND, type ShimPod, startShimPod, timed } from './workload';

/** One pod of the population: its pause container and one busybox container, both running. */
export interface PopulatedPod {
  pod: ShimPod;
  containerId: string;
}

/** Adds pods through the shim until there are `containers` Docker containers (2 per pod). */
export async function populate(
  client: CriClient,
  bench: BenchRun,
  pods: PopulatedPod[],
  containers: number,
  concurrency: number,
): Promise<void> {
  const wanted = Math.ceil(containers / 2);
  const names = Array.from({ length: Math.max(0, wanted - pods.length) }, (_, i) => `pop${pods.length + i}`);
  const added = await mapLimit(names, concurrency, (name) => startShimPod(client, bench, name, POPULATION_COMMAND));
  pods.push(...added);
}

export interface ReadContext {
  client: CriClient;
  docker: Dockerode;
  bench: BenchRun;
  pods: readonly PopulatedPod[];
}

export interface ReadCall {
  /** The CRI call, with its filter if any. */
  name: string;
  /** The Docker Engine API call that answers the same question. */
  rawCall: string;
  /** Status calls need an existing pod; at 0 containers there is none to ask about. */
  needsPod: boolean;
  shim(ctx: ReadContext, i: number): Promise<unknown>;
  raw(ctx: ReadContext, i: number): Promise<unknown>;
}

const typeIs = (type: string): string => `${CONTAINER_TYPE_LABEL}=${type}`;
/** Round-robin over the population, so no single object is the only one asked about. */
const podAt = (ctx: ReadContext, i: number): PopulatedPod => ctx.pods[i % ctx.pods.length]!;

/** Which containers of the population a stats call reports on. */
type StatsScope = 'app containers' | 'every container';

/**
 * One stats row of part 2: the CRI call next to what a client of Docker alone would ask for the
 * same figures, a one-shot stats read (`one-shot=true`, no wait for a second sample) of each
 * container the call reports on, all at once. Pod-level calls cover the pause containers too:
 * their stats carry the pod network.
 */
function statsReadCall(name: string, scope: StatsScope, shim: ReadCall['shim']): ReadCall {
  return {
    name,
    rawCall: `containers/<id>/stats one-shot, ${scope === 'app containers' ? 'each app container' : 'every container'} at once`,
    needsPod: true,
    shim,
    raw: ({ docker, pods }) =>
      Promise.all(
        pods
          .flatMap((p) => (scope === 'app containers' ? [p.containerId] : [p.pod.id, p.containerId]))
          .map((id) => docker.getContainer(id).stats({ stream: false, 'one-shot': true } as { stream: false })),
      ),
  };
}

/** The stats and metrics rows of part 2 (issue 12). Builds the rows only; nothing runs at import. */
export function statsReadCalls(): ReadCall[] {
  return [
    statsReadCall('ListContainerStats', 'app containers', ({ client }) => client.runtime.ListContainerStats({})),
    statsReadCall('ListPodSandboxStats', 'every container', ({ client }) => client.runtime.ListPodSandboxStats({})),
    statsReadCall('ListPodSandboxMetrics', 'every container', ({ client }) => client.runtime.ListPodSandboxMetrics({})),
  ];
}

export const READ_CALLS: readonly ReadCall[] = [
  {
    name: 'ListPodSandbox',
    rawCall: 'containers/json all, label type=podsandbox',
    needsPod: false,
    shim: ({ client }) => client.runtime.ListPodSandbox({}),
    raw: ({ docker }) => docker.listContainers({ all: true, filters: { label: [typeIs(TYPE_SANDBOX)] } }),
  },
  {
    // kubelet's housekeeping asks for the ready ones every 2 s.
    name: 'ListPodSandbox (state=ready)',
    rawCall: 'containers/json status=running, label type=podsandbox',
    needsPod: false,
    shim: ({ client }) => client.runtime.ListPodSandbox({ filter: { state: { state: 'SANDBOX_READY' } } }),
    raw: ({ docker }) => docker.listContainers({ all: true, filters: { status: ['running'], label: [typeIs(TYPE_SANDBOX)] } }),
  },
  {
    name: 'ListContainers',
    rawCall: 'containers/json all, label type=container',
    needsPod: false,
    shim: ({ client }) => client.runtime.ListContainers({}),
    raw: ({ docker }) => docker.listContainers({ all: true, filters: { label: [typeIs(TYPE_CONTAINER)] } }),
  },
  {
    name: 'ListContainers (state=running, label selector)',
    rawCall: 'containers/json status=running, 2 labels',
    needsPod: false,
    shim: ({ client, bench }) =>
      client.runtime.ListContainers({ filter: { state: { state: 'CONTAINER_RUNNING' }, labelSelector: { [TEST_LABEL]: bench.run } } }),
    raw: ({ docker, bench }) =>
      docker.listContainers({ all: true, filters: { status: ['running'], label: [typeIs(TYPE_CONTAINER), `${TEST_LABEL}=${bench.run}`] } }),
  },
  {
    name: 'ListContainers (pod_sandbox_id)',
    rawCall: 'containers/json all, label sandbox.id',
    needsPod: true,
    shim: (ctx, i) => ctx.client.runtime.ListContainers({ filter: { podSandboxId: podAt(ctx, i).pod.id } }),
    raw: (ctx, i) =>
      ctx.docker.listContainers({ all: true, filters: { label: [typeIs(TYPE_CONTAINER), `${SANDBOX_ID_LABEL}=${podAt(ctx, i).pod.id}`] } }),
  },
  {
    name: 'PodSandboxStatus',
    rawCall: 'containers/<id>/json',
    needsPod: true,
    shim: (ctx, i) => ctx.client.runtime.PodSandboxStatus({ podSandboxId: podAt(ctx, i).pod.id }),
    raw: (ctx, i) => ctx.docker.getContainer(podAt(ctx, i).pod.id).inspect(),
  },
  {
    name: 'ContainerStatus',
    rawCall: 'containers/<id>/json',
    needsPod: true,
    shim: (ctx, i) => ctx.client.runtime.ContainerStatus({ containerId: podAt(ctx, i).containerId }),
    raw: (ctx, i) => ctx.docker.getContainer(podAt(ctx, i).containerId).inspect(),
  },
  {
    name: 'ListImages',
    rawCall: 'images/json',
    needsPod: false,
    shim: ({ client }) => client.images.ListImages({}),
    raw: ({ docker }) => docker.listImages({ digests: true }),
  },
  {
    name: 'ImageStatus',
    rawCall: 'images/<name>/json',
    needsPod: false,
    shim: ({ client }) => client.images.ImageStatus({ image: { image: TEST_BUSYBOX_IMAGE } }),
    raw: ({ docker }) => docker.getImage(TEST_BUSYBOX_IMAGE).inspect(),
  },
  {
    // cri-dockerd answers from Docker's info (the root dir) and its image list's sizes.
    name: 'ImageFsInfo',
    rawCall: 'info + images/json',
    needsPod: false,
    shim: ({ client }) => client.images.ImageFsInfo({}),
    raw: ({ docker }) => Promise.all([docker.info(), docker.listImages()]),
  },
  ...statsReadCalls(),
];

export interface ReadSamples {
  call: ReadCall;
  shim: number[];
  raw: number[];
}

/**
 * Each call `iterations` times per side after `warmup` unmeasured ones; shim and raw
 * alternate which goes first. Calls whose target needs a pod are skipped when there is none.
 * `rawToo` false leaves a call's raw side out (its `raw` samples stay empty): at scale, the
 * raw stats rows are a thousand Docker stats reads per call.
 */
export async function measureReads(ctx: ReadContext, iterations: number, warmup: number, rawToo: (call: ReadCall) => boolean = () => true): Promise<ReadSamples[]> {
  const out: ReadSamples[] = [];
  for (const call of READ_CALLS) {
    if (call.needsPod && ctx.pods.length === 0) continue;
    const samples: ReadSamples = { call, shim: [], raw: [] };
    const withRaw = rawToo(call);
    for (let i = 0; i < warmup + iterations; i++) {
      const measured = i >= warmup;
      const shim = async (): Promise<void> => {
        const { ms } = await timed(() => call.shim(ctx, i));
        if (measured) samples.shim.push(ms);
      };
      const raw = async (): Promise<void> => {
        if (!withRaw) return;
        const { ms } = await timed(() => call.raw(ctx, i));
        if (measured) samples.raw.push(ms);
      };
      await inTurn(i, shim, raw);
    }
    out.push(samples);
  }
  return out;
}

/** How many containers Docker holds in all, and how many carry the shim's type label (any run). */
export async function dockerCounts(docker: Dockerode): Promise<{ all: number; shimLabelled: number; running: number }> {
  const all = await docker.listContainers({ all: true });
  return {
    all: all.length,
    shimLabelled: all.filter((c) => c.Labels?.[CONTAINER_TYPE_LABEL] !== undefined).length,
    running: all.filter((c) => c.State === 'running').length,
  };
}
