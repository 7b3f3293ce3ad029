// Port forward over SPDY (portforward.k8s.io): for each connection the client opens a pair of
// streams sharing a requestID, an error stream and a data stream, both naming the port. The
// data stream is joined to 127.0.0.1:<port> as the pod sees it: for pods with their own
// network namespace through a small relay run inside it with nsenter (so ports the pod binds
// to its loopback work); for host-network pods directly.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { Duplex, type Readable } from 'node:stream';
import type { DockerClient } from '../docker/client';
import { errorMessage } from '../errors';
import type { Logger } from '../util/logger';
import { checkPort } from './requests';
import type { SpdyServerSession, SpdyStream } from './spdy/session';

/**
 * port-relay.js beside this module, or under streaming/ when this code runs from the one-file
 * bundle in dist/src (scripts/bundle.mjs), whose __dirname is that of the bundle.
 */
const RELAY_SCRIPT = [path.join(__dirname, 'port-relay.js'), path.join(__dirname, 'streaming', 'port-relay.js')].find((f) => fs.existsSync(f)) ?? path.join(__dirname, 'port-relay.js');

export interface PortForwardTarget {
  sandboxId: string;
  /** Ports the CRI request named; empty allows any (kubelet sends the pod's requested ports). */
  ports: number[];
}

export async function podDialer(docker: DockerClient, sandboxId: string): Promise<(port: number) => Promise<Duplex>> {
  const inspect = await docker.inspectContainer(sandboxId);
  if (!inspect.State.Running || !inspect.State.Pid) throw new Error(`pod sandbox ${sandboxId} is not running`);
  if (inspect.HostConfig.NetworkMode === 'host') return (port) => dialDirect(port);
  const pid = inspect.State.Pid;
  return (port) => dialInNamespace(pid, port);
}

function dialDirect(port: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    socket.once('connect', () => resolve(socket));
    socket.once('error', (err) => reject(new Error(`failed to connect to localhost:${port}: ${err.message}`)));
  });
}

/**
 * Runs the relay in the network namespace of `pid` and resolves once it has connected (it
 * says so on fd 3); when it cannot connect, rejects with the relay's own message.
 */
function dialInNamespace(pid: number, port: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const child = spawn('nsenter', [`--target=${pid}`, '--net', '--', process.execPath, RELAY_SCRIPT, String(port)], {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const ready = child.stdio[3] as Readable;
    let connected = false;
    ready.once('data', () => {
      connected = true;
      const joined = Duplex.from({ readable: child.stdout!, writable: child.stdin! });
      // The client gone or the stream broken: the relay has nothing left to do.
      joined.once('close', () => {
        if (child.exitCode === null) child.kill();
      });
      resolve(joined);
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (!connected) reject(new Error(stderr.trim() || `port relay exited with code ${code}`));
    });
  });
}

export function servePortForward(session: SpdyServerSession, target: PortForwardTarget, dial: (port: number) => Promise<Duplex>, log: Logger): void {
  const pending = new Map<string, { error?: SpdyStream; data?: SpdyStream }>();
  session.on('stream', (stream) => {
    const type = stream.header('streamType');
    const requestId = stream.header('requestID') ?? legacyRequestId(stream.id, type);
    if (type !== 'error' && type !== 'data') return void stream.destroy();
    stream.on('error', () => undefined);
    const pair = pending.get(requestId) ?? {};
    if (pair[type]) return void stream.destroy();
    pair[type] = stream;
    pending.set(requestId, pair);
    if (pair.error && pair.data) {
      pending.delete(requestId);
      void forward(pair.error, pair.data, target, dial, log);
    }
  });
}

/**
 * Clients before requestID existed opened each pair as error stream N, data stream N+2; the
 * pair is keyed by the error stream's ID.
 */
export function legacyRequestId(streamId: number, streamType: string | undefined): string {
  return String(streamType === 'data' ? streamId - 2 : streamId);
}

async function forward(errorStream: SpdyStream, data: SpdyStream, target: PortForwardTarget, dial: (port: number) => Promise<Duplex>, log: Logger): Promise<void> {
  const fail = (message: string): void => {
    errorStream.end(message);
    data.end();
  };
  let port: number;
  try {
    port = checkPort('port', Number(data.header('port')));
  } catch (err) {
    return fail(errorMessage(err));
  }
  if (target.ports.length > 0 && !target.ports.includes(port)) return fail(`port ${port} was not requested for pod ${target.sandboxId}`);
  let upstream: Duplex;
  try {
    upstream = await dial(port);
  } catch (err) {
    log.debug({ sandboxId: target.sandboxId, port, error: errorMessage(err) }, 'port forward: connection failed');
    return fail(errorMessage(err));
  }
  upstream.on('error', (err: Error) => {
    if (!errorStream.writableEnded) errorStream.end(err.message);
    data.destroy();
  });
  data.pipe(upstream);
  upstream.pipe(data);
  data.once('close', () => upstream.destroy());
  upstream.once('end', () => {
    if (!errorStream.writableEnded) errorStream.end();
  });
}
