// UpdateContainerResources through Docker's update; what Docker cannot change is refused.
import type { CallContext, UpdateContainerResourcesRequest__Output, UpdateContainerResourcesResponse } from '../../cri/types';
import { InvalidArgumentError } from '../../errors';
import type { ShimContext } from '../context';
import { resolveShimObject } from '../resolve';
import { toDockerUpdate } from '../../translate/to-docker/container-resources';

export async function updateContainerResources(
  shim: ShimContext,
  req: UpdateContainerResourcesRequest__Output,
  ctx: CallContext,
): Promise<UpdateContainerResourcesResponse> {
  const opts = { signal: ctx.signal };
  if (!req.linux) throw new InvalidArgumentError('linux is required');
  const { id: Id } = await resolveShimObject(shim.docker, 'container', 'container_id', req.containerId, opts);
  const current = await shim.docker.inspectContainer(Id, opts);
  await shim.docker.updateContainer(Id, toDockerUpdate('linux', req.linux, current), opts);
  return {};
}
