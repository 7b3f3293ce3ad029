// Exec and attach over WebSocket (the *.channel.k8s.io sub-protocols): every message starts
// with its channel number (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize); the base64
// variants send text, the channel as an ASCII digit followed by base64 data. v5 adds channel
// 255, by which the client closes one of its channels (stdin EOF).
import { type Duplex, PassThrough, Writable } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import { endWritable, ResizeFeed, type StdioChannels } from './channels';
import { IdleTimer, MAX_UNSENT_BYTES, PAUSED_PROBE_MS, SEND_BUFFER_BYTES } from './limits';
import { encodeOutcome, isBase64WebSocket, type Outcome } from './protocol';
import type { StdioOptions } from './requests';

export const enum Channel {
  Stdin = 0,
  Stdout = 1,
  Stderr = 2,
  Error = 3,
  Resize = 4,
  Close = 255,
}

/** One message on a channel as the protocol frames it. */
export function encodeChannelMessage(channel: number, data: Buffer, base64: boolean): Buffer | string {
  if (base64) return String.fromCharCode(0x30 + channel) + data.toString('base64');
  return Buffer.concat([Buffer.from([channel]), data]);
}

/** The channel of a received message; undefined for an empty or malformed one. */
export function channelOf(message: Buffer, base64: boolean): number | undefined {
  if (message.length === 0) return undefined;
  if (!base64) return message[0]!;
  const channel = message[0]! - 0x30;
  return channel >= 0 && channel <= 9 ? channel : undefined;
}

/** A received message's payload: a view of it, or decoded from base64. */
export function payloadOf(message: Buffer, base64: boolean): Buffer {
  return base64 ? Buffer.from(message.subarray(1).toString('latin1'), 'base64') : message.subarray(1);
}

export interface WsChannelOptions {
  /** The connection's socket, to see when our unsent output drains. */
  socket: Duplex;
  /** The connection closes after this long without a message either way; 0 never. */
  idleTimeoutMs: number;
  /** While the connection is not read, a ping this often; for tests. */
  pausedProbeMs?: number;
}

/**
 * The client's messages are read only while stdin has room for them (the pipe into Docker takes
 * them as the command reads) and while our own output (pongs) is not piling up unsent; a message
 * is at most the server's maxPayload. While reading is paused, a ping now and then notices a
 * client that has gone.
 */
export function wsChannels(ws: WebSocket, opts: StdioOptions, conn: WsChannelOptions): StdioChannels {
  const protocol = ws.protocol;
  const base64 = isBase64WebSocket(protocol);
  const idle = new IdleTimer(conn.idleTimeoutMs, () => ws.close(1000, 'streaming connection idle timeout'));
  const send = (channel: number, data: Buffer, done: (err?: Error | null) => void): void => {
    if (ws.readyState !== ws.OPEN) return done();
    idle.touch();
    ws.send(encodeChannelMessage(channel, data, base64), { binary: !base64 }, (err) => done(err ?? null));
  };
  // Output completes at once while the socket holds less than SEND_BUFFER_BYTES unsent, else
  // once it drains: the next chunk is read while this one goes out, and a client that stops
  // reading stops the writer.
  let sendWaiters: Array<() => void> = [];
  conn.socket.on('drain', () => {
    if (ws.bufferedAmount >= SEND_BUFFER_BYTES) return;
    for (const done of sendWaiters.splice(0)) done();
  });
  const output = (channel: number): Writable =>
    new Writable({
      write: (chunk: Buffer, _enc, done) => {
        if (ws.readyState !== ws.OPEN) return done();
        idle.touch();
        ws.send(encodeChannelMessage(channel, chunk, base64), { binary: !base64 });
        if (ws.bufferedAmount < SEND_BUFFER_BYTES) done();
        else sendWaiters.push(done);
      },
    });

  const stdin = opts.stdin ? new PassThrough() : undefined;
  const stdout = opts.stdout ? output(Channel.Stdout) : undefined;
  const stderr = opts.stderr && !opts.tty ? output(Channel.Stderr) : undefined;
  // Only a TTY session reads its resize channel; the others ignore it.
  const resizes = new ResizeFeed(opts.tty);

  // Reading stops while any reason holds, and resumes when none does.
  const holds = new Set<'stdin' | 'unsent'>();
  let probe: NodeJS.Timeout | undefined;
  const hold = (reason: 'stdin' | 'unsent'): void => {
    if (holds.has(reason)) return;
    holds.add(reason);
    if (holds.size > 1) return;
    ws.pause();
    probe = setInterval(() => {
      if (ws.readyState === ws.OPEN) ws.ping();
    }, conn.pausedProbeMs ?? PAUSED_PROBE_MS);
    probe.unref();
  };
  const release = (reason: 'stdin' | 'unsent'): void => {
    if (!holds.delete(reason) || holds.size > 0) return;
    clearInterval(probe);
    probe = undefined;
    ws.resume();
  };
  const checkUnsent = (): void => {
    if (ws.bufferedAmount <= MAX_UNSENT_BYTES) return;
    hold('unsent');
    const drained = (): void => {
      if (ws.bufferedAmount > MAX_UNSENT_BYTES) return;
      conn.socket.off('drain', drained);
      release('unsent');
    };
    conn.socket.on('drain', drained);
  };
  stdin?.on('drain', () => release('stdin'));
  // Once the client closed stdin, what it sends there is dropped: nothing to hold for.
  stdin?.on('finish', () => release('stdin'));

  // A broken connection shows up as 'close' too; an unhandled 'error' would end the shim.
  ws.on('error', () => undefined);
  ws.on('ping', () => {
    idle.touch();
    checkUnsent();
  });
  ws.on('pong', () => idle.touch());
  ws.on('message', (raw: RawData) => {
    idle.touch();
    const message = toBuffer(raw);
    const channel = channelOf(message, base64);
    // A resize channel closed (no TTY, or a message over the bound) is dropped undecoded.
    if (channel === Channel.Resize && resizes.open) resizes.push(payloadOf(message, base64));
    else if (channel === Channel.Stdin && stdin && !stdin.writableEnded) {
      if (!stdin.write(payloadOf(message, base64))) hold('stdin');
    } else if (channel === Channel.Close && payloadOf(message, base64)[0] === Channel.Stdin) stdin?.end();
  });
  const clientGone = new Promise<void>((resolve) =>
    ws.once('close', () => {
      idle.stop();
      clearInterval(probe);
      const waiting = sendWaiters;
      sendWaiters = [];
      for (const done of waiting) done();
      stdin?.end();
      resolve();
    }),
  );

  // The first (empty) message tells the client the connection is ready, as kubelet does.
  const first = stdout ? Channel.Stdout : stderr ? Channel.Stderr : Channel.Error;
  send(first, Buffer.alloc(0), () => undefined);

  return {
    protocol,
    stdin,
    stdout,
    stderr,
    takeResizes: (listener) => resizes.take(listener),
    clientGone,
    async finish(outcome: Outcome): Promise<void> {
      await Promise.all([endWritable(stdout), endWritable(stderr)]);
      const status = encodeOutcome(outcome, protocol);
      if (status.length > 0) await new Promise<void>((resolve) => send(Channel.Error, status, () => resolve()));
      // The client's close frame must be read for the closing handshake to complete.
      holds.clear();
      clearInterval(probe);
      ws.resume();
      ws.close(1000);
    },
  };
}

function toBuffer(raw: RawData): Buffer {
  if (Buffer.isBuffer(raw)) return raw;
  if (Array.isArray(raw)) return Buffer.concat(raw);
  return Buffer.from(raw);
}
