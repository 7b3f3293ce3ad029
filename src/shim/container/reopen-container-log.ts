// ReopenContainerLog: kubelet renamed the log away to rotate it; the follower starts a fresh
// file at the log path, between two writes, so no line is lost.
import type { CallContext, ReopenContainerLogRequest__Output, ReopenContainerLogResponse } from '../../cri/types';
import { FailedPreconditionError } from '../../errors';
import type { ShimContext } from '../context';
import { inspectShimContainer } from '../support/resolve';

export async function reopenContainerLog(
  shim: ShimContext,
  req: ReopenContainerLogRequest__Output,
  ctx: CallContext,
): Promise<ReopenContainerLogResponse> {
  const opts = { signal: ctx.signal };
  const inspect = await inspectShimContainer(shim, req.containerId, opts);
  const { Id } = inspect;
  if (!inspect.State.Running) throw new FailedPreconditionError(`container ${Id} is not running`);
  await shim.logs.reopen(Id);
  return {};
}
