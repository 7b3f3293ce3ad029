// Attach: check the request and the container, register the attachment with the streaming
// server and answer the URL the client opens next (see ../../streaming).
import type { CallContext, AttachRequest__Output, AttachResponse } from '../../cri/types';
import { checkAttachRequest } from '../../streaming/requests';
import type { ShimContext } from '../context';
import { resolveRunningShimObject } from '../support/resolve';

export async function attach(shim: ShimContext, req: AttachRequest__Output, ctx: CallContext): Promise<AttachResponse> {
  const checked = checkAttachRequest(req);
  const container = await resolveRunningShimObject(shim, 'container', 'container_id', checked.containerId, { signal: ctx.signal });
  return { url: shim.streaming.urlFor({ kind: 'attach', ...checked, containerId: container.id, sandboxId: container.sandboxId }) };
}
