// Exec and attach once the client is connected: Docker's hijacked connection is wired to the
// client's channels (stdin in, stdout/stderr out, resizes to Docker), and when the output
// ends the outcome goes on the error stream: for exec the command's exit code.
import type { Duplex } from 'node:stream';
import { Writable } from 'node:stream';
import type { DockerClient } from '../docker/client';
import { errorMessage } from '../errors';
import type { Logger } from '../util/logger';
import type { StdioChannels } from './channels';
import { pipeInBatches } from './batched-pipe';
import { DockerOutput } from './docker-output';
import { ResizeCoalescer } from './resize-coalescer';
import type { Outcome, TerminalSize } from './protocol';
import type { StreamRequest } from './requests';

type ExecRequest = Extract<StreamRequest, { kind: 'exec' }>;
type AttachRequest = Extract<StreamRequest, { kind: 'attach' }>;

/** After the output ends, Docker may need a moment to record the exit code. */
const EXIT_CODE_WAIT_MS = 5_000;

export async function runExec(docker: DockerClient, req: ExecRequest, channels: StdioChannels, log: Logger): Promise<void> {
  let outcome: Outcome;
  try {
    const execId = await docker.createExec(req.containerId, {
      Cmd: req.cmd,
      AttachStdin: req.stdin,
      AttachStdout: req.stdout,
      AttachStderr: req.stderr,
      Tty: req.tty,
    });
    // A user's session: from the streams' Docker budget, never the kubelet's (docker/socket-pool.ts).
    const connection = await docker.startExec(execId, { tty: req.tty, stdin: req.stdin }, { userStream: true });
    await relay(connection, req.tty, channels, (size) => docker.resizeExec(execId, size), log);
    const code = await exitCodeOf(docker, execId);
    outcome = code === 0 ? { kind: 'success' } : { kind: 'exit', code };
  } catch (err) {
    log.warn({ containerId: req.containerId, error: errorMessage(err) }, 'streaming exec failed');
    outcome = { kind: 'error', message: errorMessage(err) };
  }
  await channels.finish(outcome);
}

export async function runAttach(docker: DockerClient, req: AttachRequest, channels: StdioChannels, log: Logger): Promise<void> {
  let outcome: Outcome = { kind: 'success' };
  try {
    // The container's own TTY setting decides whether Docker multiplexes its output.
    const inspect = await docker.inspectContainer(req.containerId);
    const tty = inspect.Config.Tty === true;
    const connection = await docker.attachContainer(req.containerId, { stdin: req.stdin, stdout: req.stdout, stderr: req.stderr }, { userStream: true });
    await relay(connection, tty, channels, (size) => docker.resizeContainer(req.containerId, size), log);
  } catch (err) {
    log.warn({ containerId: req.containerId, error: errorMessage(err) }, 'streaming attach failed');
    outcome = { kind: 'error', message: errorMessage(err) };
  }
  await channels.finish(outcome);
}

/**
 * Copies between Docker's connection and the client until the output ends or the client goes,
 * with backpressure both ways: stdin is piped into Docker's connection, and Docker's output is
 * read only as fast as the client takes it (DockerOutput).
 */
function relay(
  connection: Duplex,
  tty: boolean,
  channels: StdioChannels,
  resize: (size: TerminalSize) => Promise<void>,
  log: Logger,
): Promise<void> {
  const output = new DockerOutput(channels.stdout ?? discard(), channels.stderr ?? discard(), tty);
  output.readFrom(connection);
  if (channels.stdin) {
    // Closing our write side closes the process's stdin; its output keeps coming.
    pipeInBatches(channels.stdin, connection);
  }
  // Only a terminal is resized (attach: the container's own TTY setting, whatever the request said).
  const resizes = tty ? new ResizeCoalescer(resize, log) : undefined;
  channels.takeResizes(resizes);
  void channels.clientGone.then(() => resizes?.stop());
  return new Promise<void>((resolve) => {
    // Done once all the output went to the client's channels; a connection that broke before
    // its end will send nothing more.
    output.once('finish', () => resolve());
    const broken = (): void => {
      if (!connection.readableEnded) resolve();
    };
    connection.once('close', broken);
    // Any number of errors may follow one another on a dying connection; each is handled.
    connection.on('error', broken);
    void channels.clientGone.then(() => {
      connection.destroy();
      output.destroy();
      resolve();
    });
  });
}

function discard(): Writable {
  return new Writable({ write: (_chunk, _enc, done) => done() });
}

async function exitCodeOf(docker: DockerClient, execId: string): Promise<number> {
  const deadline = Date.now() + EXIT_CODE_WAIT_MS;
  for (;;) {
    const exec = await docker.inspectExec(execId);
    if (!exec.Running && exec.ExitCode !== null) return exec.ExitCode;
    if (Date.now() > deadline) throw new Error(`exec ${execId}: Docker did not report an exit code`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
