// Streaming clients for large transfers (the bench's streams part, the checksum tests): what
// arrives is handed to a sink as it comes (counted, hashed) instead of being kept, so a GiB
// costs the client no memory and no copies. SPDY as Go's spdystream speaks it (kubectl,
// crictl), WebSocket with the channel protocols.
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { ControlType, encodeControl, encodeData, FLAG_FIN, FrameReader, HeaderCodec } from '../../src/streaming/spdy/framing';

/** Where a stream's or channel's data goes as it arrives. */
export type Sink = (data: Buffer) => void;

/** What kubectl's and crictl's stdin copy writes at a time (Go's io.Copy buffer). */
export const CLIENT_CHUNK = 32 * 1024;

/**
 * A SPDY/3 client as Go's spdystream is one: no windows counted or granted, streams opened
 * without waiting for replies, the server's pings answered. It counts the data each stream
 * receives, hands it to the stream's sink, and keeps it only for streams opened with `keep`.
 */
export class SpdySinkClient {
  private readonly codec = new HeaderCodec();
  private readonly reader = new FrameReader();
  private nextId = 1;
  private readonly received = new Map<number, number>();
  private readonly sinks = new Map<number, Sink>();
  private readonly text = new Map<number, Buffer[]>();
  private readonly ends = new Map<number, () => void>();
  private readonly ended = new Map<number, Promise<void>>();
  readonly closed: Promise<void>;

  constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    void this.closed.then(() => {
      for (const end of this.ends.values()) end();
    });
  }

  /** Opens a stream; `keep`: its data is kept (error and stderr streams); `sink`: its data goes there too. */
  async open(headers: Record<string, string>, opts: { fin?: boolean; keep?: boolean; sink?: Sink } = {}): Promise<number> {
    const id = this.nextId;
    this.nextId += 2;
    this.received.set(id, 0);
    if (opts.keep) this.text.set(id, []);
    if (opts.sink) this.sinks.set(id, opts.sink);
    this.ended.set(id, new Promise((resolve) => this.ends.set(id, resolve)));
    const head = Buffer.alloc(10);
    head.writeUInt32BE(id, 0);
    const block = await this.codec.deflate(Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])));
    this.socket.write(encodeControl(ControlType.SynStream, opts.fin ? FLAG_FIN : 0, Buffer.concat([head, block])));
    return id;
  }

  /** Sends `chunks` on stream `id` as data frames, one a chunk, at the pace the socket drains; then its FIN. */
  async send(id: number, chunks: Iterable<Buffer>): Promise<void> {
    for (const chunk of chunks) {
      const head = Buffer.allocUnsafe(8);
      head.writeUInt32BE(id, 0);
      head.writeUInt32BE(chunk.length, 4);
      this.socket.write(head);
      if (!this.socket.write(chunk)) await new Promise((r) => this.socket.once('drain', r));
    }
    this.socket.write(encodeData(id, FLAG_FIN, Buffer.alloc(0)));
  }

  /** Resolves with the bytes the stream received once the server ended (or reset) it, or the connection closed. */
  async drained(id: number): Promise<number> {
    await this.ended.get(id);
    return this.received.get(id) ?? 0;
  }

  /** What a stream opened with `keep` received, as text. */
  kept(id: number): string {
    return Buffer.concat(this.text.get(id) ?? []).toString();
  }

  close(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    for (const e of this.reader.push(chunk)) {
      if (e.kind === 'data') {
        this.received.set(e.streamId, (this.received.get(e.streamId) ?? 0) + e.data.length);
        if (e.data.length > 0) {
          this.sinks.get(e.streamId)?.(e.data);
          this.text.get(e.streamId)?.push(Buffer.from(e.data));
        }
        if (e.fin) this.ends.get(e.streamId)?.();
      } else if (e.type === ControlType.RstStream) this.ends.get(e.payload.readUInt32BE(0) & 0x7fffffff)?.();
      else if (e.type === ControlType.Ping && (e.payload.readUInt32BE(0) & 1) === 0) this.socket.write(encodeControl(ControlType.Ping, 0, e.payload));
    }
  }
}

export interface WsSink {
  ws: WebSocket;
  /** Bytes received per channel (the channel byte not counted). */
  received: Map<number, number>;
  /** What a kept channel received, as text. */
  kept(channel: number): string;
  /** Resolves when the connection closed. */
  closed: Promise<void>;
}

/**
 * A WebSocket client of the binary channel protocols: each message's payload goes to its
 * channel's sink, and is kept for the channels in `keep`.
 */
export async function wsSink(url: string, protocol: string, sinks: Readonly<Record<number, Sink>>, keep: readonly number[], opts: { zeroMask?: boolean } = {}): Promise<WsSink> {
  // `zeroMask` (the bench): the client's own masking costs nothing on the CPU the shim shares
  // with it (ws skips it), while the server unmasks as for any mask. Tests keep random masks,
  // so that a server unmasking wrongly is seen.
  const options = opts.zeroMask ? { generateMask: (mask: Buffer) => void mask.fill(0) } : {};
  const ws = new WebSocket(url.replace(/^http/, 'ws'), [protocol], options);
  const received = new Map<number, number>();
  const text = new Map<number, Buffer[]>(keep.map((c) => [c, []]));
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  ws.on('message', (raw: Buffer) => {
    const channel = raw[0]!;
    const payload = raw.subarray(1);
    received.set(channel, (received.get(channel) ?? 0) + payload.length);
    if (payload.length > 0) sinks[channel]?.(payload);
    text.get(channel)?.push(Buffer.from(payload));
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, received, kept: (channel) => Buffer.concat(text.get(channel) ?? []).toString(), closed };
}

/**
 * Sends `chunks` on `channel`, a message each as client-go's executor writes stdin, with at most
 * 256 KiB unsent; then (v5) closes the channel.
 */
export async function wsSend(ws: WebSocket, channel: number, chunks: Iterable<Buffer>): Promise<void> {
  let unsent = 0;
  let room: (() => void) | undefined;
  for (const chunk of chunks) {
    const message = Buffer.allocUnsafe(chunk.length + 1);
    message[0] = channel;
    chunk.copy(message, 1);
    unsent += chunk.length;
    ws.send(message, () => {
      unsent -= chunk.length;
      if (unsent < 4 * CLIENT_CHUNK) room?.();
    });
    if (unsent >= 8 * CLIENT_CHUNK) await new Promise<void>((resolve) => (room = resolve));
  }
  // v5: channel 255 closes one of the client's channels.
  ws.send(Buffer.from([255, channel]));
}

/** `bytes` as CLIENT_CHUNK pieces of `source` (repeated from its start when shorter). */
export function* chunksOf(source: Buffer, bytes: number): Generator<Buffer> {
  for (let sent = 0; sent < bytes; ) {
    const at = sent % source.length;
    const piece = source.subarray(at, Math.min(at + CLIENT_CHUNK, source.length, at + bytes - sent));
    sent += piece.length;
    yield piece;
  }
}
