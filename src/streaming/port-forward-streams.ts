// Port forward over SPDY (portforward.k8s.io): for each connection the client opens a pair of
// streams sharing a requestID, an error stream and a data stream, both naming the port. The
// data stream is joined to 127.0.0.1:<port> as the pod sees it: for pods with their own
// network namespace through the pod's relay (pod-relay.ts, so ports the pod binds to its
// loopback work); for host-network pods directly.
//
// Bounds: a half of a pair waits at most the stream creation timeout for the other (then both
// are reset); a pod has at most so many connections at once, all sessions together (past it the
// pair's error stream says so); the session's stream count bounds the rest.
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import { errorMessage } from '../errors';
import type { Logger } from '../util/logger';
import { checkPort } from './requests';
import type { SpdyServerSession, SpdyStream } from './spdy/session';
import { pipeInBatches } from './batched-pipe';

interface PortForwardTarget {
  sandboxId: string;
  /** Ports the CRI request named; empty allows any (kubelet sends the pod's requested ports). */
  ports: number[];
}

export interface PortForwardOptions {
  target: PortForwardTarget;
  dial: (port: number) => Promise<Duplex>;
  /** A place for one more connection to the pod (its release), or why there is none. */
  connectionSlot: () => (() => void) | string;
  /** How long the first stream of a pair waits for the second. */
  pairTimeoutMs: number;
  log: Logger;
}

export function dialDirect(port: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    socket.once('connect', () => resolve(socket));
    socket.once('error', (err) => reject(new Error(`failed to connect to localhost:${port}: ${err.message}`)));
  });
}

interface Pair {
  error?: SpdyStream;
  data?: SpdyStream;
  timer: NodeJS.Timeout;
}

export function servePortForward(session: SpdyServerSession, opts: PortForwardOptions): void {
  const pending = new Map<string, Pair>();
  const abandon = (requestId: string): void => {
    const pair = pending.get(requestId);
    if (!pair) return;
    pending.delete(requestId);
    clearTimeout(pair.timer);
    pair.error?.destroy();
    pair.data?.destroy();
  };
  session.on('stream', (stream) => {
    const type = stream.header('streamType');
    if (type !== 'error' && type !== 'data') return void stream.refuse();
    const requestId = stream.header('requestID') ?? legacyRequestId(stream.id, type);
    let pair = pending.get(requestId);
    if (pair?.[type]) return void stream.refuse();
    if (!pair) {
      pair = { timer: setTimeout(() => abandon(requestId), opts.pairTimeoutMs) };
      pair.timer.unref();
      pending.set(requestId, pair);
    }
    pair[type] = stream;
    // A half reset or gone before its pair came: the pair is given up.
    stream.once('close', () => {
      if (pending.get(requestId)?.[type] === stream) abandon(requestId);
    });
    if (pair.error && pair.data) {
      pending.delete(requestId);
      clearTimeout(pair.timer);
      void connect(session, pair.error, pair.data, opts);
    }
  });
  session.on('close', () => {
    for (const pair of pending.values()) clearTimeout(pair.timer);
    pending.clear();
  });
}

/**
 * Clients before requestID existed opened each pair as error stream N, data stream N+2; the
 * pair is keyed by the error stream's ID.
 */
export function legacyRequestId(streamId: number, streamType: string | undefined): string {
  return String(streamType === 'data' ? streamId - 2 : streamId);
}

async function connect(session: SpdyServerSession, errorStream: SpdyStream, data: SpdyStream, opts: PortForwardOptions): Promise<void> {
  const { target, log } = opts;
  // Clients send nothing on the error stream; whatever comes is dropped.
  errorStream.resume();
  const fail = (message: string): void => {
    errorStream.end(message);
    data.end();
    data.resume();
  };
  let port: number;
  try {
    port = checkPort('port', Number(data.header('port')));
  } catch (err) {
    return fail(errorMessage(err));
  }
  if (target.ports.length > 0 && !target.ports.includes(port)) return fail(`port ${port} was not requested for pod ${target.sandboxId}`);
  const release = opts.connectionSlot();
  if (typeof release === 'string') {
    log.info({ sandboxId: target.sandboxId, port }, `port forward: ${release}`);
    return fail(release);
  }
  // Held while the pair stands (the client may still send on it), given back at once if the dial fails.
  data.once('close', release);
  let upstream: Duplex;
  try {
    upstream = await opts.dial(port);
  } catch (err) {
    release();
    log.debug({ sandboxId: target.sandboxId, port, error: errorMessage(err) }, 'port forward: connection failed');
    return fail(errorMessage(err));
  }
  // The client went, or reset the pair, while we connected.
  if (data.destroyed || session.isClosed) {
    upstream.destroy();
    return;
  }
  upstream.on('error', (err: Error) => {
    if (!errorStream.writableEnded) errorStream.end(err.message);
    data.destroy();
  });
  pipeInBatches(data, upstream);
  upstream.pipe(data);
  data.once('close', () => upstream.destroy());
  upstream.once('end', () => {
    if (!errorStream.writableEnded) errorStream.end();
  });
}
