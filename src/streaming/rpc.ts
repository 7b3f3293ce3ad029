// The Exec, Attach and PortForward RPCs: check the request and the object it names, register
// it with the streaming server and answer the URL the client opens next.
import type {
  AttachRequest__Output,
  AttachResponse,
  CallContext,
  ExecRequest__Output,
  ExecResponse,
  PortForwardRequest__Output,
  PortForwardResponse,
} from '../cri/types';
import { FailedPreconditionError } from '../errors';
import type { ShimContext } from '../shim/context';
import { resolveShimObject } from '../shim/resolve';
import { checkAttachRequest, checkExecRequest, checkPortForwardRequest } from './requests';

export async function exec(shim: ShimContext, req: ExecRequest__Output, ctx: CallContext): Promise<ExecResponse> {
  const checked = checkExecRequest(req);
  const containerId = await runningContainer(shim, checked.containerId, ctx);
  return { url: shim.streaming.urlFor({ kind: 'exec', ...checked, containerId }) };
}

export async function attach(shim: ShimContext, req: AttachRequest__Output, ctx: CallContext): Promise<AttachResponse> {
  const checked = checkAttachRequest(req);
  const containerId = await runningContainer(shim, checked.containerId, ctx);
  return { url: shim.streaming.urlFor({ kind: 'attach', ...checked, containerId }) };
}

export async function portForward(shim: ShimContext, req: PortForwardRequest__Output, ctx: CallContext): Promise<PortForwardResponse> {
  const checked = checkPortForwardRequest(req);
  const { Id, State } = await resolveShimObject(shim.docker, 'sandbox', 'pod_sandbox_id', checked.sandboxId, { signal: ctx.signal });
  if (State !== 'running') throw new FailedPreconditionError(`pod sandbox ${Id} is not running`);
  return { url: shim.streaming.urlFor({ kind: 'portforward', sandboxId: Id, ports: checked.ports }) };
}

async function runningContainer(shim: ShimContext, id: string, ctx: CallContext): Promise<string> {
  const { Id, State } = await resolveShimObject(shim.docker, 'container', 'container_id', id, { signal: ctx.signal });
  if (State !== 'running') throw new FailedPreconditionError(`container ${Id} is not running`);
  return Id;
}
