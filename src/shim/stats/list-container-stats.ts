// ListContainerStats: one Docker list call for the matching containers, then each container's
// cgroup files (../../stats/collector.ts). Containers that are not running are listed with zero
// usage; one that vanishes mid-call is left out. Overlapping calls with the same filter share one
// collection (../../util/single-flight.ts), stopped when all their callers have given up.
import type {
  CallContext,
  ContainerStats,
  ContainerStatsFilter__Output,
  ListContainerStatsRequest__Output,
  ListContainerStatsResponse,
} from '../../cri/types';
import type { ContainerSummary, DockerFilters } from '../../docker/types';
import type { ShimContext } from '../context';
import { isFullId } from '../../conventions/ids';
import { mapInSlices } from '../../stats/slices';
import { CONTAINER_TYPE_LABEL, fromDockerLabels, matchesLabelSelector, SANDBOX_ID_LABEL, TYPE_CONTAINER } from '../../conventions/labels';


export function dockerFiltersForStats(filter: ContainerStatsFilter__Output | null): DockerFilters {
  const label = [`${CONTAINER_TYPE_LABEL}=${TYPE_CONTAINER}`];
  if (filter?.podSandboxId && isFullId(filter.podSandboxId)) label.push(`${SANDBOX_ID_LABEL}=${filter.podSandboxId}`);
  for (const [k, v] of Object.entries(filter?.labelSelector ?? {})) label.push(`${k}=${v}`);
  return { label };
}

/** CRI's filter on a listed container: ID and pod sandbox ID as prefixes, and the label selector. */
export function matchesStatsFilter(c: ContainerSummary, filter: ContainerStatsFilter__Output | null): boolean {
  if (!filter) return true;
  if (filter.id !== '' && !c.Id.startsWith(filter.id)) return false;
  if (filter.podSandboxId !== '' && !(c.Labels?.[SANDBOX_ID_LABEL] ?? '').startsWith(filter.podSandboxId)) return false;
  return matchesLabelSelector(fromDockerLabels(c.Labels).labels, filter.labelSelector);
}

/** The stats; calls with the same filter that overlap share one collection. */
export function collectContainerStats(shim: ShimContext, filter: ContainerStatsFilter__Output | null, { signal }: Pick<CallContext, 'signal'>): Promise<ContainerStats[]> {
  return shim.sharedReads.run(`ListContainerStats ${JSON.stringify(filter)}`, signal, (shared) => containerStatsOf(shim, filter, shared));
}

async function containerStatsOf(shim: ShimContext, filter: ContainerStatsFilter__Output | null, signal: AbortSignal): Promise<ContainerStats[]> {
  const collector = shim.stats;
  collector.sweep();
  const found = await shim.docker.listContainers({ all: true, filters: dockerFiltersForStats(filter) }, { signal });
  const stats = await mapInSlices(found.filter((c) => matchesStatsFilter(c, filter)), (c) => collector.containerStats(c, signal), signal);
  return stats.filter((s): s is ContainerStats => s !== undefined);
}

export async function listContainerStats(shim: ShimContext, req: ListContainerStatsRequest__Output, ctx: CallContext): Promise<ListContainerStatsResponse> {
  return { stats: await collectContainerStats(shim, req.filter, ctx) };
}

