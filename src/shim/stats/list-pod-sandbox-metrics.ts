// ListPodSandboxMetrics: every ready pod and its running containers, with figures read from
// the kernel (../../pod-metrics). The two lists and the inspect documents come from the state
// cache, so a scrape sends Docker nothing while the cache is synced. Overlapping calls share one
// collection (../../util/single-flight.ts), stopped when all their callers have given up.
import type { CallContext, ListPodSandboxMetricsResponse, PodSandboxMetrics } from '../../cri/types';
import type { ContainerInspect, ContainerSummary } from '../../docker/types';
import { CONTAINER_TYPE_LABEL, SANDBOX_ID_LABEL, TYPE_CONTAINER, TYPE_SANDBOX } from '../../conventions/labels';
import { parseContainerDockerName, parseSandboxDockerName } from '../../conventions/naming';
import { DockerNotFoundError } from '../../errors';
import type { PodTarget } from '../../pod-metrics/collector';
import type { ShimContext } from '../context';

/** The container's inspect document, or undefined when it was removed after the list. */
async function inspected(shim: ShimContext, c: ContainerSummary, signal: AbortSignal): Promise<ContainerInspect | undefined> {
  try {
    return await shim.docker.inspectContainer(c.Id, { signal });
  } catch (err) {
    if (err instanceof DockerNotFoundError) return undefined;
    throw err;
  }
}

/** Every pod's metrics; calls that overlap share one collection. */
export function collectPodMetrics(shim: ShimContext, { signal }: Pick<CallContext, 'signal'>): Promise<PodSandboxMetrics[]> {
  return shim.sharedReads.run('ListPodSandboxMetrics', signal, (shared) => podMetricsOf(shim, shared));
}

async function podMetricsOf(shim: ShimContext, signal: AbortSignal): Promise<PodSandboxMetrics[]> {
  const running = (type: string) => shim.docker.listContainers({ all: false, filters: { label: [`${CONTAINER_TYPE_LABEL}=${type}`] } }, { signal });
  const [pauses, containers] = await Promise.all([running(TYPE_SANDBOX), running(TYPE_CONTAINER)]);
  const [pauseDocs, containerDocs] = await Promise.all([
    Promise.all(pauses.map((p) => inspected(shim, p, signal))),
    Promise.all(containers.map((c) => inspected(shim, c, signal))),
  ]);
  const bySandbox = new Map<string, ContainerInspect[]>();
  for (const doc of containerDocs) {
    const sandbox = doc?.Config.Labels?.[SANDBOX_ID_LABEL];
    if (!doc || !sandbox) continue;
    bySandbox.set(sandbox, [...(bySandbox.get(sandbox) ?? []), doc]);
  }
  const pods: PodTarget[] = [];
  for (const sandbox of pauseDocs) {
    if (!sandbox) continue;
    const meta = parseSandboxDockerName(sandbox.Name);
    pods.push({
      sandbox,
      name: meta?.name ?? '',
      namespace: meta?.namespace ?? '',
      containers: (bySandbox.get(sandbox.Id) ?? []).map((inspect) => ({ inspect, name: parseContainerDockerName(inspect.Name)?.containerName ?? '' })),
    });
  }
  return shim.podMetrics.collect(pods, signal);
}

export async function listPodSandboxMetrics(shim: ShimContext, ctx: CallContext): Promise<ListPodSandboxMetricsResponse> {
  return { podMetrics: await collectPodMetrics(shim, ctx) };
}
