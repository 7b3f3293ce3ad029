// Exec: check the request and the container, register the command with the streaming server
// and answer the URL the client opens next (see ../../streaming).
import type { CallContext, ExecRequest__Output, ExecResponse } from '../../cri/types';
import { checkExecRequest } from '../../streaming/requests';
import type { ShimContext } from '../context';
import { resolveRunningShimObject } from '../support/resolve';

export async function exec(shim: ShimContext, req: ExecRequest__Output, ctx: CallContext): Promise<ExecResponse> {
  const checked = checkExecRequest(req);
  const container = await resolveRunningShimObject(shim, 'container', 'container_id', checked.containerId, { signal: ctx.signal });
  return { url: shim.streaming.urlFor({ kind: 'exec', ...checked, containerId: container.id, sandboxId: container.sandboxId }) };
}
