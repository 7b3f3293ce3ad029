// ExecSync: run a command in a running container and hand back its output and exit code.
// With a timeout (or when the caller's deadline passes) the command's processes are killed
// and the call fails with DEADLINE_EXCEEDED (a timeout of weeks, up to int64's, is clamped to
// what a timer holds: ../../util/timer-delay.ts). Output is written into the answer's encoding
// as it arrives, capped so that it fits in one 16 MiB gRPC message and bounded for all calls
// together (./support/capped-output.ts); what did not fit is reported at the end of stderr.
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CallContext, ExecSyncRequest__Output, ExecSyncResponse } from '../../cri/types';
import { CancelledError, DeadlineExceededError, FailedPreconditionError, InvalidArgumentError } from '../../errors';
import { demuxInto } from '../../docker/stream-frames';
import type { ShimContext } from '../context';
import { inspectShimContainer } from '../support/resolve';
import { withEncoding } from '../../cri/contract';
import { ExecSyncOutput } from './support/capped-output';
import { killExecTree } from '../../kernel/process-tree';
import { quote } from '../../util/quote';
import { requestedWaitSeconds } from '../../util/timer-delay';

/** After the output ends, Docker may need a moment to record the exit code. */
const EXIT_CODE_WAIT_MS = 5_000;

export async function execSync(shim: ShimContext, req: ExecSyncRequest__Output, ctx: CallContext): Promise<ExecSyncResponse> {
  if (req.cmd.length === 0) throw new InvalidArgumentError('cmd is required');
  const timeoutSeconds = requestedWaitSeconds('timeout', req.timeout);
  const opts = { signal: ctx.signal };
  const inspect = await inspectShimContainer(shim, req.containerId, opts);
  const { Id } = inspect;
  if (!inspect.State.Running) throw new FailedPreconditionError(`container ${Id} is not running`);

  const execId = await shim.dockerCached.createExec(Id, { Cmd: [...req.cmd], AttachStdout: true, AttachStderr: true, AttachStdin: false, Tty: false }, opts);
  const output = new ExecSyncOutput(shim.execOutput);
  try {
    const connection = await shim.dockerCached.startExec(execId, { tty: false, stdin: false }, opts);
    demuxInto(connection, (stream, data) => output.take(stream, data));

    const outcome = await raceOutput(connection, timeoutSeconds, ctx.signal);
    if (outcome !== 'ended') {
      const exec = await shim.dockerCached.inspectExec(execId).catch(() => undefined);
      const killed = exec?.Running && exec.Pid > 0 ? await killExecTree(exec.Pid, Id) : 0;
      connection.destroy();
      shim.log.debug({ containerId: Id, execId, killed }, 'exec ran out of time; killed');
      if (outcome === 'cancelled') throw new CancelledError('ExecSync: cancelled by the client');
      throw new DeadlineExceededError(`command ${quote(req.cmd.join(' '))} timed out after ${timeoutSeconds}s`);
    }

    const exitCode = await exitCodeOf(shim, execId, ctx.signal);
    const { bytes, stdout, stderr } = output.encode(exitCode);
    return withEncoding({ stdout, stderr, exitCode }, bytes);
  } finally {
    // The pool is given back on every path; output that arrives later is dropped.
    output.release();
  }
}

type Outcome = 'ended' | 'timeout' | 'cancelled';

function raceOutput(connection: Duplex, timeoutSeconds: number, signal: AbortSignal): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    const timer = timeoutSeconds > 0 ? setTimeout(() => finish('timeout'), timeoutSeconds * 1000) : undefined;
    const onAbort = (): void => finish(signal.reason instanceof Error && /deadline/.test(signal.reason.message) ? 'timeout' : 'cancelled');
    function finish(o: Outcome): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(o);
    }
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    connection.once('end', () => finish('ended'));
    connection.once('close', () => finish('ended'));
    connection.once('error', () => finish('ended'));
  });
}

/** Polls until Docker reports the exit code; stops as soon as the caller gives up. */
async function exitCodeOf(shim: ShimContext, execId: string, signal: AbortSignal): Promise<number> {
  const deadline = Date.now() + EXIT_CODE_WAIT_MS;
  for (;;) {
    const exec = await shim.dockerCached.inspectExec(execId, { signal });
    if (!exec.Running && exec.ExitCode !== null) return exec.ExitCode;
    if (Date.now() > deadline) throw new DeadlineExceededError(`exec ${execId}: Docker did not report an exit code`);
    await sleep(20, undefined, { signal }).catch(() => {
      throw signal.reason;
    });
  }
}
