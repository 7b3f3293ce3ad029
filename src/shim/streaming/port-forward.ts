// PortForward: check the request and the pod, register the ports with the streaming server and
// answer the URL the client opens next (see ../../streaming).
import type { CallContext, PortForwardRequest__Output, PortForwardResponse } from '../../cri/types';
import { checkPortForwardRequest } from '../../streaming/requests';
import type { ShimContext } from '../context';
import { resolveRunningShimObject } from '../support/resolve';

export async function portForward(shim: ShimContext, req: PortForwardRequest__Output, ctx: CallContext): Promise<PortForwardResponse> {
  const checked = checkPortForwardRequest(req);
  const sandbox = await resolveRunningShimObject(shim, 'sandbox', 'pod_sandbox_id', checked.sandboxId, { signal: ctx.signal });
  return { url: shim.streaming.urlFor({ kind: 'portforward', sandboxId: sandbox.id, ports: checked.ports }) };
}
