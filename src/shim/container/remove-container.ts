// RemoveContainer: end its log follower and force-remove it (running or not), side by side. A
// container that is already gone is removed: success.
import type { CallContext, RemoveContainerRequest__Output, RemoveContainerResponse } from '../../cri/types';
import { DockerNotFoundError, NotFoundError } from '../../errors';
import type { ShimContext } from '../context';
import { mayNameShimObject } from '../../conventions/ids';
import { identifyShimObject } from '../support/resolve';
import { removeContainerAndFollower } from '../sandbox/support/pod-containers';

export async function removeContainer(shim: ShimContext, req: RemoveContainerRequest__Output, ctx: CallContext): Promise<RemoveContainerResponse> {
  if (!mayNameShimObject('container_id', req.containerId)) return {};
  const opts = { signal: ctx.signal };
  try {
    const { id: Id } = await identifyShimObject(shim, 'container', 'container_id', req.containerId, opts);
    await removeContainerAndFollower(shim, Id, opts);
  } catch (err) {
    if (err instanceof NotFoundError || err instanceof DockerNotFoundError) return {};
    throw err;
  }
  return {};
}
