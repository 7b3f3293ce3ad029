// ListPodSandboxMetrics: every ready pod and its running containers, with figures read from
// the kernel (../../pod-metrics). Two typed queries (../../object-store/shim-objects.ts) find them;
// while the state cache is synced they are answered from memory and carry the cache's inspect
// documents, so a scrape sends Docker nothing. Overlapping calls share one collection
// (../../util/single-flight.ts), stopped when all their callers have given up, and its bytes:
// the answer is sent as the collector encoded it (../../pod-metrics/metric-encoding.ts).
import { withEncoding } from '../../cri/contract';
import type { CallContext, ListPodSandboxMetricsResponse } from '../../cri/types';
import type { ContainerInspect } from '../../docker/types';
import { groupBySandbox, type ShimObject } from '../../object-store/shim-objects';
import { parseContainerDockerName, parseSandboxDockerName } from '../../conventions/naming';
import { DockerNotFoundError } from '../../errors';
import type { EncodedPodMetrics } from '../../pod-metrics/metric-encoding';
import type { PodTarget } from '../../pod-metrics/metrics-collector';
import type { ShimContext } from '../context';

/** The object's inspect document from Docker, or undefined when it was removed after the list. */
async function inspected(shim: ShimContext, o: ShimObject, signal: AbortSignal): Promise<ContainerInspect | undefined> {
  try {
    return await shim.dockerCached.inspectContainer(o.id, { signal });
  } catch (err) {
    if (err instanceof DockerNotFoundError) return undefined;
    throw err;
  }
}

/** Every pod's metrics; calls that overlap share one collection. */
export function collectPodMetrics(shim: ShimContext, { signal }: Pick<CallContext, 'signal'>): Promise<EncodedPodMetrics> {
  return shim.sharedReads.run('ListPodSandboxMetrics', signal, (shared) => podMetricsOf(shim, shared));
}

async function podMetricsOf(shim: ShimContext, signal: AbortSignal): Promise<EncodedPodMetrics> {
  const [pauses, containers] = await Promise.all([
    shim.objects.list({ kind: 'sandbox', state: 'SANDBOX_READY' }, { signal }),
    shim.objects.list({ kind: 'container', state: 'CONTAINER_RUNNING' }, { signal }),
  ]);
  const bySandbox = groupBySandbox(containers);
  // Answered from the cache, every document is at hand (no promise per container); else the missing ones are asked of Docker.
  const missing = [...pauses, ...pauses.flatMap((p) => bySandbox.get(p.id) ?? [])].filter((o) => o.inspect === undefined);
  const fetched = new Map(await Promise.all(missing.map(async (o) => [o.id, await inspected(shim, o, signal)] as const)));
  const documentOf = (o: ShimObject): ContainerInspect | undefined => o.inspect ?? fetched.get(o.id);
  const pods: PodTarget[] = [];
  for (const pause of pauses) {
    const sandbox = documentOf(pause);
    if (!sandbox) continue;
    const meta = parseSandboxDockerName(sandbox.Name);
    const members: Array<PodTarget['containers'][number]> = [];
    for (const c of bySandbox.get(pause.id) ?? []) {
      const inspect = documentOf(c);
      if (inspect) members.push({ inspect, name: parseContainerDockerName(inspect.Name)?.containerName ?? '' });
    }
    pods.push({ sandbox, name: meta?.name ?? '', namespace: meta?.namespace ?? '', containers: members });
  }
  return shim.podMetrics.collect(pods, signal);
}

/** The answer, sent as its encoding; the object itself holds no pods (nothing in the shim reads them). */
export async function listPodSandboxMetrics(shim: ShimContext, ctx: CallContext): Promise<ListPodSandboxMetricsResponse> {
  return withEncoding({}, (await collectPodMetrics(shim, ctx)).bytes);
}
