// The cheap client side of the bench's and checksum tests' large transfers, read as Go's clients
// (kubectl, crictl) read: into one reused buffer (bufio), not a fresh 64 KiB Buffer a read as
// Node's 'data' events allocate. A connection of our own (net.connect with `onread`, as the
// shim's Docker connection in src/docker/hijack.ts), our own upgrade request, and frame readers
// that hand each payload piece on as a view of that buffer: valid during the call only. What a
// reader keeps past a read (a frame head cut across reads, a control frame's payload) it copies.
import { createHash, randomBytes } from 'node:crypto';
import * as net from 'node:net';
import { parseHijackHead, type HijackHead } from '../../src/docker/hijack';
import { FLAG_FIN, FrameError, MAX_CONTROL_FRAME_PAYLOAD, SPDY_VERSION } from '../../src/streaming/spdy/framing';

/** The bytes of one read, and of the connection's one reused buffer. */
export const LENT_READ_BYTES = 64 * 1024;
/** Of a refused upgrade's body, the first this many bytes are kept for its error. */
const MAX_REFUSAL_BODY_BYTES = 64 * 1024;

/** Takes one read, lent: `data` is overwritten by the next read, so nothing may keep it. */
export type LentReader = (data: Buffer) => void;

export interface UpgradedConnection {
  socket: net.Socket;
  head: HijackHead;
  /** Every read goes to `reader` from now on, the bytes that came with the head first. */
  read(reader: LentReader): void;
}

/** A refused upgrade: the answer's status and body. */
export interface UpgradeRefusal extends Error {
  status: number;
  body: string;
}

/**
 * Sends `method url` asking to upgrade (`headers` say to what) on a connection of our own, and
 * resolves once the server answered 101; rejects with an UpgradeRefusal for any other answer.
 */
export function upgradeConnection(url: string, method: 'GET' | 'POST', headers: Readonly<Record<string, string>>): Promise<UpgradedConnection> {
  const target = new URL(url);
  if (target.protocol !== 'http:') throw new Error(`upgradeConnection: ${target.protocol} is not served here (http only)`);
  // Go's client sends a POST without a body with Content-Length: 0.
  const lines = [`${method} ${target.pathname}${target.search} HTTP/1.1`, `Host: ${target.host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  if (method === 'POST') lines.push('Content-Length: 0');
  const request = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  const buffer = Buffer.allocUnsafeSlow(LENT_READ_BYTES);
  return new Promise((resolve, reject) => {
    let head: Buffer = Buffer.alloc(0);
    let parsed: HijackHead | undefined;
    let refusal: Buffer[] | undefined;
    let reader: LentReader | undefined;
    /** Reads that came before there was a reader: copies. */
    let early: Buffer[] = [];
    const refuse = (): void => {
      const body = Buffer.concat(refusal!).subarray(0, MAX_REFUSAL_BODY_BYTES).toString();
      reject(Object.assign(new Error(`HTTP ${parsed!.statusCode}: ${body}`), { status: parsed!.statusCode, body }));
      socket.destroy();
    };
    const onRead = (n: number): boolean => {
      const data = buffer.subarray(0, n);
      if (reader) {
        reader(data);
        return true;
      }
      if (parsed?.statusCode === 101) {
        early.push(Buffer.from(data));
        return true;
      }
      if (refusal) {
        refusal.push(Buffer.from(data));
        if (refusal.reduce((sum, b) => sum + b.length, 0) >= Number(parsed!.headers.get('content-length') ?? MAX_REFUSAL_BODY_BYTES)) refuse();
        return true;
      }
      head = Buffer.concat([head, data]);
      try {
        parsed = parseHijackHead(head);
      } catch (err) {
        reject(new Error(`the upgrade's answer: ${(err as Error).message.replace("Docker's answer ", '')}`));
        socket.destroy();
        return false;
      }
      if (!parsed) return true;
      const rest = Buffer.from(head.subarray(parsed.bodyStart));
      if (parsed.statusCode !== 101) {
        refusal = [rest];
        if (rest.length >= Number(parsed.headers.get('content-length') ?? MAX_REFUSAL_BODY_BYTES)) refuse();
        return true;
      }
      if (rest.length > 0) early.push(rest);
      resolve({
        socket,
        head: parsed,
        read(r) {
          reader = r;
          const first = early;
          early = [];
          for (const b of first) r(b);
        },
      });
      return true;
    };
    const socket = net.connect({ host: target.hostname, port: Number(target.port || 80), onread: { buffer, callback: onRead } });
    socket.once('connect', () => socket.write(request));
    socket.on('error', (err) => reject(err));
    socket.once('close', () => (refusal ? refuse() : reject(new Error('the server closed the connection before answering the upgrade'))));
  });
}

/** Copies into `into.payload` what `chunk` holds of it from `off` on; answers the bytes taken. */
function gather(into: { payload: Buffer; have: number }, chunk: Buffer, off: number): number {
  const take = Math.min(into.payload.length - into.have, chunk.length - off);
  chunk.copy(into.payload, into.have, off, off + take);
  into.have += take;
  return take;
}

// ---- SPDY/3.1 ----------------------------------------------------------------------------

export interface SpdyFrameHandler {
  /** A piece of a data frame's payload, lent; `fin` on the frame's last piece (which may be empty). */
  data(streamId: number, piece: Buffer, fin: boolean): void;
  /** A whole control frame; `payload` is the handler's to keep. */
  control(type: number, flags: number, payload: Buffer): void;
}

/**
 * SPDY/3 frames from lent reads: data handed on piece by piece as views of the read (never
 * buffered, whatever length a frame says), a frame head cut across reads and control frames
 * (at most MAX_CONTROL_FRAME_PAYLOAD) copied. Throws FrameError on what a session cannot take.
 */
export class LentSpdyReader {
  private readonly head = Buffer.alloc(8);
  private headHave = 0;
  private control: { type: number; flags: number; payload: Buffer; have: number } | undefined;
  private data: { streamId: number; flags: number; left: number } | undefined;

  constructor(private readonly handler: SpdyFrameHandler) {}

  push(chunk: Buffer): void {
    let off = 0;
    while (off < chunk.length) {
      if (this.data) {
        const take = Math.min(this.data.left, chunk.length - off);
        const { streamId, flags } = this.data;
        this.data.left -= take;
        const last = this.data.left === 0;
        if (last) this.data = undefined;
        this.handler.data(streamId, chunk.subarray(off, off + take), last && (flags & FLAG_FIN) !== 0);
        off += take;
        continue;
      }
      if (this.control) {
        const c = this.control;
        off += gather(c, chunk, off);
        if (c.have === c.payload.length) {
          this.control = undefined;
          this.handler.control(c.type, c.flags, c.payload);
        }
        continue;
      }
      const take = Math.min(8 - this.headHave, chunk.length - off);
      chunk.copy(this.head, this.headHave, off, off + take);
      this.headHave += take;
      off += take;
      if (this.headHave < 8) break;
      this.headHave = 0;
      this.startFrame();
    }
  }

  private startFrame(): void {
    const first = this.head.readUInt32BE(0);
    const flags = this.head[4]!;
    const length = this.head.readUIntBE(5, 3);
    if ((first & 0x80000000) === 0) {
      const streamId = first & 0x7fffffff;
      if (length === 0) this.handler.data(streamId, Buffer.alloc(0), (flags & FLAG_FIN) !== 0);
      else this.data = { streamId, flags, left: length };
      return;
    }
    const version = (first >>> 16) & 0x7fff;
    if (version !== SPDY_VERSION) throw new FrameError(`SPDY version ${version} is not supported`);
    if (length > MAX_CONTROL_FRAME_PAYLOAD) throw new FrameError(`SPDY control frame of ${length} bytes (at most ${MAX_CONTROL_FRAME_PAYLOAD})`);
    const type = first & 0xffff;
    if (length === 0) this.handler.control(type, flags, Buffer.alloc(0));
    else this.control = { type, flags, payload: Buffer.allocUnsafe(length), have: 0 };
  }
}

// ---- WebSocket (RFC 6455) with the k8s channel protocols --------------------------------

export const WS_OPCODE = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;
/** RFC 6455 5.5: a control frame's payload is at most 125 bytes. */
const MAX_WS_CONTROL_PAYLOAD = 125;

export class WsProtocolError extends Error {
  override readonly name = 'WsProtocolError';
}

export interface WsFrameHandler {
  /** A piece of a binary message's payload after its channel byte, lent. */
  data(channel: number, piece: Buffer): void;
  /** A whole control frame (close, ping, pong); `payload` is the handler's to keep. */
  control(opcode: number, payload: Buffer): void;
}

/**
 * A server's WebSocket frames from lent reads, as the binary k8s channel protocols carry them:
 * each binary message (fragmented or not) starts with its channel byte, and the rest is handed
 * on piece by piece as views of the read. Frame heads cut across reads and control frames are
 * copied. Throws WsProtocolError on what RFC 6455 forbids a server to send (masked frames,
 * reserved bits, continuation out of place, long or fragmented control frames) and on text
 * messages (the base64 protocols, which this reader is not for).
 */
export class LentWsReader {
  /** 2 bytes, then up to 8 of extended length (a server sends no mask). */
  private readonly head = Buffer.alloc(10);
  private headHave = 0;
  private frame: { opcode: number; fin: boolean; left: number } | undefined;
  private control: { opcode: number; payload: Buffer; have: number } | undefined;
  /** Within a binary message: its channel once its first byte came (-1 before). */
  private message: { channel: number } | undefined;

  constructor(private readonly handler: WsFrameHandler) {}

  push(chunk: Buffer): void {
    let off = 0;
    while (off < chunk.length) {
      if (this.control) {
        const c = this.control;
        off += gather(c, chunk, off);
        if (c.have === c.payload.length) {
          this.control = undefined;
          this.handler.control(c.opcode, c.payload);
        }
        continue;
      }
      if (this.frame) {
        const f = this.frame;
        const take = Math.min(f.left, chunk.length - off);
        f.left -= take;
        this.dataPiece(chunk.subarray(off, off + take));
        off += take;
        if (f.left === 0) this.endFrame();
        continue;
      }
      const need = this.headLength();
      const take = Math.min(need - this.headHave, chunk.length - off);
      chunk.copy(this.head, this.headHave, off, off + take);
      this.headHave += take;
      off += take;
      // The first two bytes say how long the head is.
      if (this.headHave < need || (need === 2 && this.headLength() > 2)) continue;
      this.startFrame();
    }
  }

  /** The head's length as far as it is known (2 until its second byte came). */
  private headLength(): number {
    if (this.headHave < 2) return 2;
    const code = this.head[1]! & 0x7f;
    return code === 126 ? 4 : code === 127 ? 10 : 2;
  }

  private startFrame(): void {
    const b0 = this.head[0]!;
    const b1 = this.head[1]!;
    const headBytes = this.headLength();
    this.headHave = 0;
    if ((b0 & 0x70) !== 0) throw new WsProtocolError('a frame with reserved bits set (no extension was agreed)');
    if ((b1 & 0x80) !== 0) throw new WsProtocolError('a masked frame from the server (RFC 6455 5.1)');
    const fin = (b0 & 0x80) !== 0;
    const opcode = b0 & 0x0f;
    let length = b1 & 0x7f;
    if (headBytes === 4) length = this.head.readUInt16BE(2);
    else if (headBytes === 10) {
      const long = this.head.readBigUInt64BE(2);
      if (long > BigInt(Number.MAX_SAFE_INTEGER)) throw new WsProtocolError(`a frame of ${long} bytes`);
      length = Number(long);
    }
    if (opcode >= 0x8) {
      if (!fin || length > MAX_WS_CONTROL_PAYLOAD) throw new WsProtocolError(`a control frame (opcode ${opcode}) fragmented or over ${MAX_WS_CONTROL_PAYLOAD} bytes`);
      if (opcode !== WS_OPCODE.close && opcode !== WS_OPCODE.ping && opcode !== WS_OPCODE.pong) throw new WsProtocolError(`unknown opcode ${opcode}`);
      if (length === 0) this.handler.control(opcode, Buffer.alloc(0));
      else this.control = { opcode, payload: Buffer.allocUnsafe(length), have: 0 };
      return;
    }
    if (opcode === WS_OPCODE.text) throw new WsProtocolError('a text message: only the binary channel protocols are read here');
    if (opcode === WS_OPCODE.binary) {
      if (this.message) throw new WsProtocolError('a new message before the last one ended');
      this.message = { channel: -1 };
    } else if (opcode === WS_OPCODE.continuation) {
      if (!this.message) throw new WsProtocolError('a continuation frame outside a message');
    } else throw new WsProtocolError(`unknown opcode ${opcode}`);
    this.frame = { opcode, fin, left: length };
    if (length === 0) this.endFrame();
  }

  private dataPiece(piece: Buffer): void {
    const message = this.message!;
    if (message.channel < 0) {
      message.channel = piece[0]!;
      piece = piece.subarray(1);
    }
    if (piece.length > 0) this.handler.data(message.channel, piece);
  }

  private endFrame(): void {
    const fin = this.frame!.fin;
    this.frame = undefined;
    if (fin) this.message = undefined;
  }
}

/** The head of one masked client frame of `length` bytes with `mask`. */
export function wsClientFrameHead(opcode: number, length: number, mask: Buffer): Buffer {
  const extra = length < 126 ? 0 : length < 0x10000 ? 2 : 8;
  const head = Buffer.allocUnsafe(2 + extra + 4);
  head[0] = 0x80 | opcode;
  if (extra === 0) head[1] = 0x80 | length;
  else if (extra === 2) {
    head[1] = 0x80 | 126;
    head.writeUInt16BE(length, 2);
  } else {
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(length), 2);
  }
  mask.copy(head, 2 + extra);
  return head;
}

/** `parts` masked with `mask` (RFC 6455 5.3), one buffer. */
export function wsMasked(parts: readonly Buffer[], mask: Buffer): Buffer {
  const out = Buffer.concat(parts);
  for (let i = 0; i < out.length; i++) out[i] = out[i]! ^ mask[i & 3]!;
  return out;
}

/** The Sec-WebSocket-Accept a server answers `key` with (RFC 6455 4.2.2). */
export function wsAccept(key: string): string {
  return createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
}

/** A fresh Sec-WebSocket-Key. */
export function wsKey(): string {
  return randomBytes(16).toString('base64');
}
