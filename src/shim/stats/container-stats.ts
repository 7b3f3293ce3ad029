// ContainerStats: one container's figures from its cgroup files (../../stats/stats-collector.ts).
// Overlapping calls for the same container share one read (../../util/single-flight.ts).
import type { CallContext, ContainerStatsRequest__Output, ContainerStatsResponse } from '../../cri/types';
import { NotFoundError } from '../../errors';
import { quote } from '../../util/quote';
import type { ShimContext } from '../context';
import { resolveShimObject } from '../support/resolve';

export function containerStats(shim: ShimContext, req: ContainerStatsRequest__Output, ctx: CallContext): Promise<ContainerStatsResponse> {
  return shim.sharedReads.run(`ContainerStats ${req.containerId}`, ctx.signal, (signal) => statsOf(shim, req.containerId, signal));
}

async function statsOf(shim: ShimContext, containerId: string, signal: AbortSignal): Promise<ContainerStatsResponse> {
  const c = await resolveShimObject(shim, 'container', 'container_id', containerId, { signal });
  const stats = await shim.stats.containerStats(c, signal);
  if (!stats) throw new NotFoundError(`container ${quote(containerId)} not found`);
  return { stats };
}
