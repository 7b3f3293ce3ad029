// WebSocket connections that carry channels (the *.channel.k8s.io sub-protocols): every message
// starts with its channel number; the base64 variants send text, the channel as an ASCII digit
// followed by base64 data. `WsLink` is one such connection with its flow control, shared by
// exec and attach here (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize; v5 adds channel 255,
// by which the client closes one of its channels: stdin EOF) and by port forward
// (ws-port-forward.ts: two channels per port).
import { type Duplex, PassThrough, Writable } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import { endWritable, ResizeFeed, type StdioChannels } from './channels';
import { Backpressure } from './backpressure';
import { TurnCork } from './batched-pipe';
import { afterSocketSent } from './socket-sent';
import { IdleTimer, MAX_WEBSOCKET_PINGS, PING_REPLIES_PER_SECOND, RateBudget, STREAM_BUFFER_BYTES, WEBSOCKET_PINGS_PER_SECOND } from './limits';
import { encodeOutcome, isBase64WebSocket, type Outcome } from './protocol';
import type { StdioOptions } from './requests';

const enum Channel {
  Stdin = 0,
  Stdout = 1,
  Stderr = 2,
  Error = 3,
  Resize = 4,
  Close = 255,
}

/** Each channel's number as the one byte that starts its binary messages. */
const CHANNEL_BYTES: readonly Buffer[] = Array.from({ length: 256 }, (_, channel) => Buffer.from([channel]));

/** One message on a channel as the protocol frames it. */
export function encodeChannelMessage(channel: number, data: Buffer, base64: boolean): Buffer | string {
  if (base64) return String.fromCharCode(0x30 + channel) + data.toString('base64');
  return Buffer.concat([Buffer.from([channel]), data]);
}

/**
 * The channel of a received message; undefined for an empty or malformed one. A base64 channel
 * is one character from '0', so at most `base64Channels` of them (port forward has two per port).
 */
export function channelOf(message: Buffer, base64: boolean, base64Channels = 10): number | undefined {
  if (message.length === 0) return undefined;
  if (!base64) return message[0]!;
  const channel = message[0]! - 0x30;
  return channel >= 0 && channel < base64Channels ? channel : undefined;
}

/** A received message's payload: a view of it, or decoded from base64. */
export function payloadOf(message: Buffer, base64: boolean): Buffer {
  return base64 ? Buffer.from(message.subarray(1).toString('latin1'), 'base64') : message.subarray(1);
}

export interface WsChannelOptions {
  /** The connection's socket, to see when our unsent output drains. */
  socket: Duplex;
  /** The negotiated sub-protocol ('' for none). */
  protocol: string;
  /** The connection closes after this long without a message either way; 0 never. */
  idleTimeoutMs: number;
  /** While the connection is not read, a ping this often; for tests. */
  pausedProbeMs?: number;
}

/** A received message: its channel, and its payload decoded on demand (a channel nobody reads is dropped undecoded). */
type ChannelMessageListener = (channel: number | undefined, payload: () => Buffer) => void;

/**
 * One WebSocket connection carrying channels, its flow control that of backpressure.ts: output
 * paced by what the client reads, the client's messages read only while no hold stands (a
 * channel whose reader has no room says so) and while our own output (pongs) is not piling up
 * unsent; a message is at most the server's maxPayload. No message either way for the idle
 * timeout closes the connection.
 */
export class WsLink {
  readonly protocol: string;
  readonly base64: boolean;
  /** Resolves when the connection has closed (either side, or broken). */
  readonly closed: Promise<void>;
  private readonly idle: IdleTimer;
  private readonly flow: Backpressure;
  private readonly batch: TurnCork;
  private readonly socket: Duplex;

  constructor(
    private readonly ws: WebSocket,
    conn: WsChannelOptions,
    onMessage: ChannelMessageListener,
    base64Channels?: number,
  ) {
    this.protocol = conn.protocol;
    this.socket = conn.socket;
    this.batch = new TurnCork(conn.socket);
    this.base64 = isBase64WebSocket(this.protocol);
    this.idle = new IdleTimer(conn.idleTimeoutMs, () => ws.close(1000, 'streaming connection idle timeout'));
    this.flow = new Backpressure(
      {
        socket: conn.socket,
        unsent: () => ws.bufferedAmount,
        pause: () => ws.pause(),
        resume: () => ws.resume(),
        ping: () => {
          if (this.open) ws.ping();
        },
      },
      conn.pausedProbeMs,
    );
    // A broken connection shows up as 'close' too; an unhandled 'error' would end the shim.
    ws.on('error', () => undefined);
    answerPings(ws, () => {
      this.idle.touch();
      // A client that pings and never reads piles up pongs.
      this.flow.update();
    });
    ws.on('pong', () => this.idle.touch());
    ws.on('message', (raw: RawData) => {
      this.idle.touch();
      const message = toBuffer(raw);
      onMessage(channelOf(message, this.base64, base64Channels), () => payloadOf(message, this.base64));
    });
    this.closed = new Promise<void>((resolve) =>
      ws.once('close', () => {
        this.idle.stop();
        this.flow.close();
        resolve();
      }),
    );
  }

  get open(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  /** Sends one message; `done` once it is written out (or the connection is gone). */
  send(channel: number, data: Buffer, done: (err?: Error | null) => void = () => undefined): void {
    if (!this.open) return done();
    this.idle.touch();
    this.ws.send(encodeChannelMessage(channel, data, this.base64), { binary: !this.base64 }, (err) => done(err ?? null));
  }

  /** A writable whose chunks go out on `channel`, at the pace the client reads them. */
  output(channel: number): Writable {
    const output = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        if (!this.open) return done();
        this.idle.touch();
        if (this.base64) this.ws.send(encodeChannelMessage(channel, chunk, true), { binary: false });
        else this.sendFragments(channel, chunk);
        this.flow.whenSent(done);
      },
    });
    // For lent reads of Docker's (../docker-output.ts): ws writes a message to the socket at once.
    return Object.assign(output, { afterSent: (then: (sent: boolean) => void) => (output.writableLength > 0 ? then(false) : afterSocketSent(this.socket, then)) });
  }

  /**
   * One binary message of `channel` and `data` as two fragments, the channel's byte and then
   * `data` itself: the payload is not copied to put one byte before it. (Every WebSocket client
   * reassembles fragments: RFC 6455 section 5.4.) The messages of a turn of the event loop leave
   * in one write to the socket.
   */
  private sendFragments(channel: number, data: Buffer): void {
    this.batch.cork();
    this.ws.send(CHANNEL_BYTES[channel]!, { binary: true, fin: false });
    this.ws.send(data, { binary: true, fin: true });
  }

  /** Stops reading the connection until every hold is released. */
  hold(reason: string): void {
    this.flow.hold(reason);
  }

  release(reason: string): void {
    this.flow.release(reason);
  }

  /** Closes the connection once what was sent before goes out. */
  close(): void {
    // The client's close frame must be read for the closing handshake to complete.
    this.flow.close();
    this.ws.resume();
    this.ws.close(1000);
  }
}

/** Exec and attach on a WebSocket: reading stops while stdin has no room (the pipe into Docker takes it as the command reads). */
export function wsChannels(ws: WebSocket, opts: StdioOptions, conn: WsChannelOptions): StdioChannels {
  // Room for a stream's bound (as a SPDY stream has): a client's 32 KiB messages do not each
  // stop and restart the reading of its connection.
  const stdin = opts.stdin ? new PassThrough({ writableHighWaterMark: STREAM_BUFFER_BYTES }) : undefined;
  // Only a TTY session reads its resize channel; the others ignore it.
  const resizes = new ResizeFeed(opts.tty);
  const link = new WsLink(ws, conn, (channel, payload) => {
    // A resize channel closed (no TTY, or a message over the bound) is dropped undecoded.
    if (channel === Channel.Resize && resizes.open) resizes.push(payload());
    else if (channel === Channel.Stdin && stdin && !stdin.writableEnded) {
      if (!stdin.write(payload())) link.hold('stdin');
    } else if (channel === Channel.Close && payload()[0] === Channel.Stdin) stdin?.end();
  });
  const stdout = opts.stdout ? link.output(Channel.Stdout) : undefined;
  const stderr = opts.stderr && !opts.tty ? link.output(Channel.Stderr) : undefined;
  stdin?.on('drain', () => link.release('stdin'));
  // Once the client closed stdin, what it sends there is dropped: nothing to hold for.
  stdin?.on('finish', () => link.release('stdin'));
  const clientGone = link.closed.then(() => void stdin?.end());

  // The first (empty) message tells the client the connection is ready, as kubelet does.
  link.send(stdout ? Channel.Stdout : stderr ? Channel.Stderr : Channel.Error, Buffer.alloc(0));

  return {
    protocol: link.protocol,
    stdin,
    stdout,
    stderr,
    takeResizes: (listener) => resizes.take(listener),
    clientGone,
    async finish(outcome: Outcome): Promise<void> {
      await Promise.all([endWritable(stdout), endWritable(stderr)]);
      const status = encodeOutcome(outcome, link.protocol);
      if (status.length > 0) await new Promise<void>((resolve) => link.send(Channel.Error, status, () => resolve()));
      link.close();
    },
  };
}

/**
 * Answers the client's pings (the server runs `ws` with autoPong off), at most
 * PING_REPLIES_PER_SECOND, the rest not answered, as RFC 6455 allows; a connection past
 * MAX_WEBSOCKET_PINGS (regained at WEBSOCKET_PINGS_PER_SECOND) is terminated.
 */
export function answerPings(ws: WebSocket, onPing: () => void = () => undefined): void {
  const replies = new RateBudget(PING_REPLIES_PER_SECOND);
  const pings = new RateBudget(WEBSOCKET_PINGS_PER_SECOND, MAX_WEBSOCKET_PINGS);
  ws.on('ping', (data: Buffer) => {
    if (ws.readyState !== ws.OPEN) return;
    if (!pings.take()) return void ws.terminate();
    if (replies.take()) ws.pong(data);
    onPing();
  });
}

/** A received message's bytes, whatever form `ws` handed them in. */
export function toBuffer(raw: RawData): Buffer {
  if (Buffer.isBuffer(raw)) return raw;
  if (Array.isArray(raw)) return Buffer.concat(raw);
  return Buffer.from(raw);
}
