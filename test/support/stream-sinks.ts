// Streaming clients for large transfers (the bench's streams part, the checksum tests): what
// arrives is handed to a sink as it comes (counted, hashed) instead of being kept, so a GiB
// costs the client no memory and no copies. SPDY as Go's spdystream speaks it (kubectl,
// crictl), WebSocket with the channel protocols. Both read as Go's clients do, into one reused
// buffer (test/support/lent-reads.ts), so a sink gets views valid during its call only.
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { ControlType, encodeControl, encodeData, FLAG_FIN, HeaderCodec } from '../../src/streaming/spdy/framing';
import { LentSpdyReader, LentWsReader, upgradeConnection, WS_OPCODE, wsAccept, wsClientFrameHead, wsKey, wsMasked, type UpgradedConnection } from './lent-reads';

/** Where a stream's or channel's data goes as it arrives: a view lent for the call only (copy what is kept). */
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
  private readonly socket: Socket;
  private nextId = 1;
  private readonly received = new Map<number, number>();
  private readonly sinks = new Map<number, Sink>();
  private readonly text = new Map<number, Buffer[]>();
  private readonly ends = new Map<number, () => void>();
  private readonly ended = new Map<number, Promise<void>>();
  readonly closed: Promise<void>;

  /** A client on `url`, upgraded to SPDY/3.1 offering `protocol` (X-Stream-Protocol-Version). */
  static async connect(url: string, protocol: string): Promise<SpdySinkClient> {
    return new SpdySinkClient(await upgradeConnection(url, 'POST', { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': protocol }));
  }

  constructor(connection: UpgradedConnection) {
    const socket = (this.socket = connection.socket);
    const reader = new LentSpdyReader({ data: (id, piece, fin) => this.onData(id, piece, fin), control: (type, _flags, payload) => this.onControl(type, payload) });
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    void this.closed.then(() => {
      for (const end of this.ends.values()) end();
    });
    connection.read((data) => {
      try {
        reader.push(data);
      } catch {
        // A frame a session cannot take: as spdystream, the connection ends.
        socket.destroy();
      }
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

  private onData(id: number, piece: Buffer, fin: boolean): void {
    this.received.set(id, (this.received.get(id) ?? 0) + piece.length);
    if (piece.length > 0) {
      this.sinks.get(id)?.(piece);
      this.text.get(id)?.push(Buffer.from(piece));
    }
    if (fin) this.ends.get(id)?.();
  }

  private onControl(type: number, payload: Buffer): void {
    if (type === ControlType.RstStream && payload.length >= 4) this.ends.get(payload.readUInt32BE(0) & 0x7fffffff)?.();
    else if (type === ControlType.Ping && payload.length >= 4 && (payload.readUInt32BE(0) & 1) === 0) this.socket.write(encodeControl(ControlType.Ping, 0, payload));
  }
}

export interface WsSink {
  /** Bytes received per channel (the channel byte not counted). */
  received: Map<number, number>;
  /** What a kept channel received, as text. */
  kept(channel: number): string;
  /** Resolves when the connection closed. */
  closed: Promise<void>;
  /** Sends one binary message: `channel`'s byte, then `data`; resolves when the socket has room again. */
  send(channel: number, data: Buffer): Promise<void>;
  /** Ends the connection at once (no closing handshake). */
  terminate(): void;
}

/**
 * A WebSocket client of the binary channel protocols: each message's payload goes to its
 * channel's sink, and is kept for the channels in `keep`. Pings are answered, and the server's
 * close is answered and the connection ended, as gorilla/websocket (kubectl's) does.
 */
export async function wsSink(url: string, protocol: string, sinks: Readonly<Record<number, Sink>>, keep: readonly number[], opts: { zeroMask?: boolean } = {}): Promise<WsSink> {
  // `zeroMask` (the bench): the client's own masking costs nothing on the CPU the shim shares
  // with it (as `ws` skips an all-zero mask), while the server unmasks as for any mask. Tests
  // keep random masks, so that a server unmasking wrongly is seen.
  const newMask = (): Buffer => (opts.zeroMask ? ZERO_MASK : randomBytes(4));
  const key = wsKey();
  const connection = await upgradeConnection(url, 'GET', { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': key, 'Sec-WebSocket-Protocol': protocol });
  const { socket, head } = connection;
  if (head.headers.get('sec-websocket-accept') !== wsAccept(key) || head.headers.get('sec-websocket-protocol') !== protocol) {
    socket.destroy();
    throw new Error(`not a WebSocket answer for ${protocol}: ${JSON.stringify(Object.fromEntries(head.headers))}`);
  }
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const write = (opcode: number, parts: readonly Buffer[]): boolean => {
    const mask = newMask();
    const length = parts.reduce((sum, p) => sum + p.length, 0);
    const frameHead = wsClientFrameHead(opcode, length, mask);
    if (mask !== ZERO_MASK) return socket.write(Buffer.concat([frameHead, wsMasked(parts, mask)]));
    // Masking with zeros leaves the payload as it is: written without a copy, in one writev.
    socket.cork();
    socket.write(Buffer.concat([frameHead, parts[0]!]));
    for (let i = 1; i < parts.length; i++) socket.write(parts[i]!);
    socket.uncork();
    return socket.writableLength < socket.writableHighWaterMark;
  };
  const received = new Map<number, number>();
  const text = new Map<number, Buffer[]>(keep.map((c) => [c, []]));
  const reader = new LentWsReader({
    data(channel, piece) {
      received.set(channel, (received.get(channel) ?? 0) + piece.length);
      sinks[channel]?.(piece);
      text.get(channel)?.push(Buffer.from(piece));
    },
    control(opcode, payload) {
      if (opcode === WS_OPCODE.ping) write(WS_OPCODE.pong, [payload]);
      else if (opcode === WS_OPCODE.close && !socket.writableEnded) {
        write(WS_OPCODE.close, [payload.subarray(0, 2)]);
        socket.end();
      }
    },
  });
  connection.read((data) => {
    try {
      reader.push(data);
    } catch {
      socket.destroy();
    }
  });
  return {
    received,
    kept: (channel) => Buffer.concat(text.get(channel) ?? []).toString(),
    closed,
    async send(channel, data) {
      if (!write(WS_OPCODE.binary, [Buffer.from([channel]), data])) await new Promise((r) => socket.once('drain', r));
    },
    terminate: () => socket.destroy(),
  };
}

const ZERO_MASK = Buffer.alloc(4);

/**
 * Sends `chunks` on `channel`, a message each as client-go's executor writes stdin, at the pace
 * the socket drains; then (v5) closes the channel.
 */
export async function wsSend(link: WsSink, channel: number, chunks: Iterable<Buffer>): Promise<void> {
  for (const chunk of chunks) await link.send(channel, chunk);
  // v5: channel 255 closes one of the client's channels.
  await link.send(255, Buffer.from([channel]));
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
