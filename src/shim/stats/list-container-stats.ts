// ListContainerStats: the matching containers from one typed query (../../object-store/shim-objects.ts,
// answered by the state cache from memory), then each container's cgroup files
// (../../stats/stats-collector.ts). Containers that are not running are listed with zero usage; one
// that vanishes mid-call is left out. Overlapping calls with the same filter share one
// collection (../../util/single-flight.ts), stopped when all their callers have given up.
import type {
  CallContext,
  ContainerStats,
  ContainerStatsFilter__Output,
  ListContainerStatsRequest__Output,
  ListContainerStatsResponse,
} from '../../cri/types';
import { objectQueryOf } from '../../object-store/shim-objects';
import type { ShimContext } from '../context';
import { mapInSlices } from '../../stats/map-in-slices';

/** The stats; calls with the same filter that overlap share one collection. */
export function collectContainerStats(shim: ShimContext, filter: ContainerStatsFilter__Output | null, { signal }: Pick<CallContext, 'signal'>): Promise<ContainerStats[]> {
  return shim.sharedReads.run(`ListContainerStats ${JSON.stringify(filter)}`, signal, (shared) => containerStatsOf(shim, filter, shared));
}

async function containerStatsOf(shim: ShimContext, filter: ContainerStatsFilter__Output | null, signal: AbortSignal): Promise<ContainerStats[]> {
  const collector = shim.stats;
  collector.sweep();
  const found = await shim.objects.list(objectQueryOf('container', filter), { signal });
  const stats = await mapInSlices(found, (c) => collector.containerStats(c, signal), signal);
  return stats.filter((s): s is ContainerStats => s !== undefined);
}

export async function listContainerStats(shim: ShimContext, req: ListContainerStatsRequest__Output, ctx: CallContext): Promise<ListContainerStatsResponse> {
  return { stats: await collectContainerStats(shim, req.filter, ctx) };
}
