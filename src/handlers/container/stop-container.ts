// StopContainer: the stop signal, `timeout` seconds, then SIGKILL (Docker's stop does exactly
// that). A container already stopped, or gone, is stopped: success.
import type { CallContext, StopContainerRequest__Output, StopContainerResponse } from '../../cri/types';
import { DockerNotFoundError, InvalidArgumentError, NotFoundError } from '../../errors';
import type { ShimContext } from '../context';
import { mayNameShimObject } from '../../conventions/ids';
import { resolveShimObject } from '../resolve';

export async function stopContainer(shim: ShimContext, req: StopContainerRequest__Output, ctx: CallContext): Promise<StopContainerResponse> {
  const timeout = Number(req.timeout);
  if (!Number.isSafeInteger(timeout) || timeout < 0) throw new InvalidArgumentError(`timeout: ${req.timeout} must be a number of seconds, 0 or more`);
  if (!mayNameShimObject('container_id', req.containerId)) return {};
  const opts = { signal: ctx.signal };
  try {
    const { id: Id } = await resolveShimObject(shim.docker, 'container', 'container_id', req.containerId, opts);
    await shim.docker.stopContainer(Id, timeout, opts);
  } catch (err) {
    if (err instanceof NotFoundError || err instanceof DockerNotFoundError) return {};
    throw err;
  }
  return {};
}
