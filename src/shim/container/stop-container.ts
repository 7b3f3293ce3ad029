// StopContainer: the stop signal, `timeout` seconds, then SIGKILL (Docker's stop does exactly
// that). A container already stopped, or gone, is stopped: success. A timeout of weeks (up to
// int64's) is a long wait, as containerd treats it, clamped to what a timer holds
// (../../util/timer-delay.ts).
import type { CallContext, StopContainerRequest__Output, StopContainerResponse } from '../../cri/types';
import { DockerNotFoundError, NotFoundError } from '../../errors';
import { requestedWaitSeconds } from '../../util/timer-delay';
import type { ShimContext } from '../context';
import { mayNameShimObject } from '../../conventions/ids';
import { identifyShimObject } from '../support/resolve';

export async function stopContainer(shim: ShimContext, req: StopContainerRequest__Output, ctx: CallContext): Promise<StopContainerResponse> {
  const timeout = requestedWaitSeconds('timeout', req.timeout);
  if (!mayNameShimObject('container_id', req.containerId)) return {};
  const opts = { signal: ctx.signal };
  try {
    const { id: Id } = await identifyShimObject(shim, 'container', 'container_id', req.containerId, opts);
    await shim.dockerCached.stopContainer(Id, timeout, opts);
  } catch (err) {
    if (err instanceof NotFoundError || err instanceof DockerNotFoundError) return {};
    throw err;
  }
  return {};
}
