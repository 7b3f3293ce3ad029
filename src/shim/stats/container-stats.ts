// ContainerStats: one container's figures from its cgroup files (../../stats/collector.ts).
import type { CallContext, ContainerStatsRequest__Output, ContainerStatsResponse } from '../../cri/types';
import { NotFoundError } from '../../errors';
import { quote } from '../../util/quote';
import type { ShimContext } from '../context';
import { resolveShimObject } from '../resolve';

export async function containerStats(shim: ShimContext, req: ContainerStatsRequest__Output, ctx: CallContext): Promise<ContainerStatsResponse> {
  const c = await resolveShimObject(shim.docker, 'container', 'container_id', req.containerId, { signal: ctx.signal });
  const stats = await shim.stats.containerStats(c, ctx.signal);
  if (!stats) throw new NotFoundError(`container ${quote(req.containerId)} not found`);
  return { stats };
}
