// UpdateContainerResources through Docker's update; what Docker cannot change is refused.
import type { CallContext, UpdateContainerResourcesRequest__Output, UpdateContainerResourcesResponse } from '../../cri/types';
import { InvalidArgumentError } from '../../errors';
import type { ShimContext } from '../context';
import { inspectShimContainer } from '../support/resolve';
import { toDockerUpdate } from '../../translate/to-docker/container-resources';

export async function updateContainerResources(
  shim: ShimContext,
  req: UpdateContainerResourcesRequest__Output,
  ctx: CallContext,
): Promise<UpdateContainerResourcesResponse> {
  const opts = { signal: ctx.signal };
  if (!req.linux) throw new InvalidArgumentError('linux is required');
  const current = await inspectShimContainer(shim, req.containerId, opts);
  const { Id } = current;
  await shim.dockerCached.updateContainer(Id, toDockerUpdate('linux', req.linux, current), opts);
  return {};
}
