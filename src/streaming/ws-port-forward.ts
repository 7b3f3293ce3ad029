// Port forward over WebSocket, both ways Kubernetes clients speak it:
// - SPDY tunneled in a WebSocket (sub-protocol SPDY/3.1+portforward.k8s.io): client-go's
//   NewSPDYOverWebsocketDialer, which kubectl, the API server (PortForwardWebsockets) and
//   critest's --websocket-portforward use. The binary messages carry the bytes of an ordinary
//   SPDY port-forward connection; `WebSocketTunnel` makes them a byte stream, and the session is
//   served as over a plain upgrade (port-forward-streams.ts), with the same bounds.
// - kubelet's channel protocol (v4.channel.k8s.io, v4.base64.channel.k8s.io, or no
//   sub-protocol), as kubelet's streaming library serves it: the ports are fixed at the upgrade
//   (the URL's `port` query, else the CRI request's), two channels per port (data 2i, error
//   2i+1), the first message on each naming its port (uint16, little endian). Each port is one
//   connection to the pod; one whose dial or connection fails says why on its error channel and
//   the others carry on; the WebSocket closes once every port is done.
import { Duplex, PassThrough } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import { errorMessage } from '../errors';
import { quote } from '../util/quote';
import { STREAM_BUFFER_BYTES } from './limits';
import type { PortForwardOptions } from './port-forward-streams';
import { answerPings, toBuffer, WsLink, type WsChannelOptions } from './ws-channels';
import { pipeInBatches } from './batched-pipe';

/**
 * The ports a channel-protocol connection forwards: the URL's `port` values (repeated, or
 * comma-separated as kubelet reads them), else those of the CRI request; or why there are none
 * it may have. A request that named ports allows only those.
 */
export function portsOfWebSocket(query: URLSearchParams, requested: readonly number[], maxPorts: number): number[] | string {
  const ports: number[] = [];
  const values = query.getAll('port');
  for (const value of values) {
    for (const text of value.split(',')) {
      const port = /^\d{1,5}$/.test(text) ? Number(text) : 0;
      if (port < 1 || port > 65535) return `query parameter "port": ${quote(text)} is not a port (1-65535)`;
      if (ports.length === maxPorts) return `at most ${maxPorts} ports per port-forward connection`;
      ports.push(port);
    }
  }
  if (values.length === 0) ports.push(...requested.slice(0, maxPorts + 1));
  if (ports.length === 0) return 'query parameter "port" is required';
  if (ports.length > maxPorts) return `at most ${maxPorts} ports per port-forward connection`;
  const unrequested = requested.length > 0 ? ports.find((p) => !requested.includes(p)) : undefined;
  if (unrequested !== undefined) return `port ${unrequested} was not requested`;
  return ports;
}

/** The first message of each of a port's channels: the port, uint16 little endian. */
export function portPrefix(port: number): Buffer {
  const prefix = Buffer.alloc(2);
  prefix.writeUInt16LE(port, 0);
  return prefix;
}

/** What kubelet writes on a port's error channel when forwarding it fails. */
export function forwardingError(port: number, sandboxId: string, message: string): string {
  return `error forwarding port ${port} to pod ${sandboxId}, uid : ${message}`;
}

type WsPortForwardOptions = Omit<PortForwardOptions, 'pairTimeoutMs'> & { ports: number[] };

/** Serves kubelet's channel protocol on `ws` for `opts.ports`; resolves once the connection closed. */
export function serveWsPortForward(ws: WebSocket, conn: WsChannelOptions, opts: WsPortForwardOptions): Promise<void> {
  let ports: ForwardedPort[] = [];
  let left = opts.ports.length;
  const session: PortSession = {
    opts,
    link: new WsLink(
      ws,
      conn,
      (channel, payload) => {
        // Clients send only data; what comes on an error channel, or one of no port, is dropped.
        if (channel !== undefined && channel % 2 === 0) ports[channel / 2]?.fromClient(payload());
      },
      opts.ports.length * 2,
    ),
    done: () => {
      if (--left === 0) session.link.close();
    },
  };
  ports = opts.ports.map((port, i) => new ForwardedPort(i, port, session));
  for (const p of ports) p.start();
  return session.link.closed.then(() => {
    for (const p of ports) p.finish();
  });
}

interface PortSession {
  readonly link: WsLink;
  readonly opts: WsPortForwardOptions;
  /** One more port is done. */
  done(): void;
}

/** One port of a channel-protocol connection: its channels, and its one connection to the pod. */
class ForwardedPort {
  /** What the client sent for the pod: at most STREAM_BUFFER_BYTES waiting, then the connection is not read. */
  private readonly toPod = new PassThrough({ highWaterMark: STREAM_BUFFER_BYTES });
  private readonly holdName: string;
  private upstream: Duplex | undefined;
  private releaseSlot: (() => void) | undefined;
  private finished = false;

  constructor(
    private readonly index: number,
    private readonly port: number,
    private readonly session: PortSession,
  ) {
    this.holdName = `port ${index}`;
    this.toPod.on('drain', () => session.link.release(this.holdName));
    this.toPod.on('error', () => undefined);
  }

  private get dataChannel(): number {
    return 2 * this.index;
  }

  private get errorChannel(): number {
    return 2 * this.index + 1;
  }

  start(): void {
    const { link, opts } = this.session;
    link.send(this.dataChannel, portPrefix(this.port));
    link.send(this.errorChannel, portPrefix(this.port));
    const release = opts.connectionSlot();
    if (typeof release === 'string') {
      opts.log.info({ sandboxId: opts.target.sandboxId, port: this.port }, `port forward: ${release}`);
      return this.fail(release);
    }
    this.releaseSlot = release;
    opts.dial(this.port).then(
      (upstream) => this.connected(upstream),
      (err: unknown) => {
        opts.log.debug({ sandboxId: opts.target.sandboxId, port: this.port, error: errorMessage(err) }, 'port forward: connection failed');
        this.fail(errorMessage(err));
      },
    );
  }

  fromClient(data: Buffer): void {
    if (this.finished) return;
    if (!this.toPod.write(data)) this.session.link.hold(this.holdName);
  }

  /** Done: the pod's side ended, or failed, or the client went. Safe to call again. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.toPod.destroy();
    this.session.link.release(this.holdName);
    this.upstream?.destroy();
    this.releaseSlot?.();
    this.session.done();
  }

  private connected(upstream: Duplex): void {
    if (this.finished) return void upstream.destroy();
    this.upstream = upstream;
    upstream.on('error', (err: Error) => this.fail(err.message));
    const toClient = this.session.link.output(this.dataChannel);
    // The pod's side ended and what it sent went out: the port is done.
    toClient.once('finish', () => this.finish());
    pipeInBatches(this.toPod, upstream);
    upstream.pipe(toClient);
  }

  private fail(message: string): void {
    if (this.finished) return;
    this.session.link.send(this.errorChannel, Buffer.from(forwardingError(this.port, this.session.opts.target.sandboxId, message)));
    this.finish();
  }
}

/**
 * A WebSocket whose binary messages carry a byte stream each way (client-go's tunneling): what
 * arrives is read as it comes, message boundaries meaning nothing, and writes go out as
 * messages. Reading the WebSocket stops while what it delivered waits unread (the SPDY session
 * pauses it past its bounds); a write completes once it is written to the socket, so
 * `writableLength` is what waits unsent.
 */
export class WebSocketTunnel extends Duplex {
  constructor(private readonly ws: WebSocket) {
    super({ allowHalfOpen: false });
    ws.on('message', (raw: RawData, isBinary: boolean) => {
      // client-go's tunnel sends binary messages only, and fails on any other.
      if (!isBinary) return void ws.close(1003, 'the tunneled connection is carried in binary messages');
      if (!this.push(toBuffer(raw))) ws.pause();
    });
    answerPings(ws);
    // A broken connection shows up as 'close' too; an unhandled 'error' would end the shim.
    ws.on('error', () => undefined);
    // Whatever the client sent last is of no use once its connection is gone.
    ws.once('close', () => this.destroy());
  }

  override _read(): void {
    this.ws.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    if (this.ws.readyState !== this.ws.OPEN) return done(new Error('the WebSocket is closed'));
    this.ws.send(chunk, { binary: true }, (err) => done(err ?? null));
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, done: (err?: Error | null) => void): void {
    this._write(Buffer.concat(chunks.map((c) => c.chunk)), 'binary', done);
  }

  override _final(done: (err?: Error | null) => void): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.close(1000);
    done();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.ws.terminate();
    done(err);
  }
}
