// The floor under exec stdin's rows: a bare Node relay in a process of its own. It accepts a
// loopback TCP connection (as the shim's streaming server does), creates the same exec on the
// same container as the other sides (Docker's exec create, attached as `docker exec -i` is),
// starts it hijacked on a connection of its own to Docker (POST /exec/<id>/start, Upgrade:
// tcp, Tty false) and copies bytes with plain socket.pipe() both ways: the client's into the
// exec's stdin, Docker's multiplexed output (a few lines of the command's stderr) back as is.
// No SPDY or WebSocket framing, no buffers of its own, Node's defaults throughout. At the
// client's end it half-closes Docker's connection (the command's stdin ends), and once Docker's
// side has ended it inspects the exec until it is no longer running, as the shim does before it
// reports the exit. So it is what any Node process in the path costs on this machine (reading
// each chunk off one socket and writing it to another, on the same cores as dockerd and the
// command): the shim can come near this floor, never under it.
//
//   node dist/bench/stream-floor.js --serve <Docker's unix socket> <container> <command...>
// runs the relay; the streams part starts it with startStreamFloor() and sends through it with
// floorExec() (streams.ts).
import * as http from 'node:http';
import * as net from 'node:net';
import { finished } from 'node:stream/promises';
import Dockerode from 'dockerode';
import { FrameSplitter } from '../src/docker/stream-frames';
import { startFloorProcess, stopFloorProcess } from './floor-process';
import { execExitCode } from './workload';

/** Starts exec `execId` with its connection handed over (101 UPGRADED): the raw stream both ways. */
function startHijacked(dockerSocket: string, execId: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ Detach: false, Tty: false });
    const req = http.request({
      socketPath: dockerSocket,
      agent: false,
      method: 'POST',
      path: `/exec/${execId}/start`,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'Upgrade', upgrade: 'tcp' },
    });
    req.once('upgrade', (_res, socket, head) => {
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    req.once('response', (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.once('end', () => reject(new Error(`Docker answered ${res.statusCode} to the exec's start: ${text}`)));
    });
    req.once('error', reject);
    req.end(body);
  });
}

/** One client connection relayed to one exec of `cmd` in `containerId`, to its end. */
async function relay(client: net.Socket, docker: Dockerode, dockerSocket: string, containerId: string, cmd: string[]): Promise<void> {
  const exec = await docker.getContainer(containerId).exec({ Cmd: cmd, AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: false });
  const upstream = await startHijacked(dockerSocket, exec.id);
  if (client.destroyed) upstream.destroy();
  client.on('error', (err) => upstream.destroy(err));
  // At the client's end, pipe() ends Docker's side: a half-close, which ends the command's stdin.
  client.pipe(upstream);
  upstream.pipe(client, { end: false });
  await finished(upstream);
  const code = await execExitCode(exec, `the floor's exec ${cmd.join(' ')}`);
  if (code !== 0) throw new Error(`the floor's exec ${cmd.join(' ')} exited ${code}`);
  client.end();
}

function serve(dockerSocket: string, containerId: string, cmd: string[]): void {
  const docker = new Dockerode({ socketPath: dockerSocket });
  // Half-open: the client ends its stdin and still reads the command's output after.
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    client.on('error', (err) => process.stderr.write(`stream floor: the client's connection: ${err.message}\n`));
    relay(client, docker, dockerSocket, containerId, cmd).catch((err: Error) => {
      process.stderr.write(`stream floor: ${err.message}\n`);
      // A reset, not an end: the client fails instead of counting what came.
      client.resetAndDestroy();
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as net.AddressInfo).port}\n`));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

export interface StreamFloor {
  /** The relay's process: its CPU is the floor's. */
  pid: number;
  /** Its loopback port. */
  port: number;
  stop(): Promise<void>;
}

/** Starts the relay in a process of its own, for execs of `cmd` in `containerId` through Docker at `dockerSocket`. */
export async function startStreamFloor(dockerSocket: string, containerId: string, cmd: readonly string[]): Promise<StreamFloor> {
  const { child, ready } = await startFloorProcess(__filename, ['--serve', dockerSocket, containerId, ...cmd], 'the stream floor relay');
  return { pid: child.pid!, port: Number(ready), stop: () => stopFloorProcess(child) };
}

/**
 * One exec through the relay: `feed` writes its stdin, which ends when `feed` is done; answers
 * the command's stderr once the relay ended the connection (after the exec's end). Rejects when
 * the relay reset it (the exec failed).
 */
export async function floorExec(floor: StreamFloor, feed: (stdin: net.Socket) => Promise<void>): Promise<{ stderr: string }> {
  const socket = net.connect({ port: floor.port, host: '127.0.0.1', allowHalfOpen: true });
  const frames = new FrameSplitter();
  const stderr: Buffer[] = [];
  socket.on('data', (d: Buffer) =>
    frames.push(d, (stream, data) => {
      if (stream === 'stderr') stderr.push(Buffer.from(data));
    }),
  );
  const ended = finished(socket);
  try {
    // A reset while `feed` waits for room ends the wait (its 'drain' would never come).
    await Promise.race([feed(socket), ended]);
    socket.end();
    await ended;
  } catch (err) {
    socket.destroy();
    throw err;
  }
  return { stderr: Buffer.concat(stderr).toString() };
}

if (require.main === module && process.argv[2] === '--serve') {
  const [dockerSocket, containerId, ...cmd] = process.argv.slice(3);
  if (!dockerSocket || !containerId || cmd.length === 0) throw new Error('usage: stream-floor.js --serve <docker socket> <container> <command...>');
  serve(dockerSocket, containerId, cmd);
}
