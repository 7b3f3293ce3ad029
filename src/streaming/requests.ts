// The three streaming requests as the server keeps them between the RPC and the connection,
// and the pure checks of the CRI requests that produce them (INVALID_ARGUMENT naming the field).
import type { AttachRequest__Output, ExecRequest__Output, PortForwardRequest__Output } from '../cri/types';
import { InvalidArgumentError } from '../errors';
import { validateId } from '../conventions/ids';

export interface StdioOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/**
 * Every request names its pod's sandbox (an exec's or attach's is its container's pod): sessions
 * are counted per pod, all its containers together.
 */
export type StreamRequest =
  | ({ kind: 'exec'; containerId: string; sandboxId: string; cmd: string[] } & StdioOptions)
  | ({ kind: 'attach'; containerId: string; sandboxId: string } & StdioOptions)
  | { kind: 'portforward'; sandboxId: string; ports: number[] };

function checkStdio(o: StdioOptions): StdioOptions {
  if (!o.stdin && !o.stdout && !o.stderr) throw new InvalidArgumentError('one of stdin, stdout and stderr must be true');
  // With a TTY the terminal merges both outputs into one stream; kubelet refuses the pair too.
  if (o.tty && o.stderr) throw new InvalidArgumentError('tty and stderr cannot both be true');
  return o;
}

export function checkExecRequest(req: ExecRequest__Output): { containerId: string; cmd: string[] } & StdioOptions {
  validateId('container_id', req.containerId);
  if (req.cmd.length === 0) throw new InvalidArgumentError('cmd is required');
  const stdio = checkStdio({ stdin: req.stdin, stdout: req.stdout, stderr: req.stderr, tty: req.tty });
  return { containerId: req.containerId, cmd: [...req.cmd], ...stdio };
}

export function checkAttachRequest(req: AttachRequest__Output): { containerId: string } & StdioOptions {
  validateId('container_id', req.containerId);
  const stdio = checkStdio({ stdin: req.stdin, stdout: req.stdout, stderr: req.stderr, tty: req.tty });
  return { containerId: req.containerId, ...stdio };
}

export function checkPortForwardRequest(req: PortForwardRequest__Output): { sandboxId: string; ports: number[] } {
  validateId('pod_sandbox_id', req.podSandboxId);
  for (const port of req.port) checkPort('port', port);
  return { sandboxId: req.podSandboxId, ports: [...req.port] };
}

export function checkPort(field: string, port: number): number {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new InvalidArgumentError(`${field}: ${port} is not a port (1-65535)`);
  return port;
}
