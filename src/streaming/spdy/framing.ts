// SPDY/3 frames as the Kubernetes clients (Go's spdystream) speak them: control frames with a
// zlib-compressed name/value block, and data frames. Encoding and decoding of the frame
// layout is pure; the stateful header compression lives in HeaderCodec.
import * as zlib from 'node:zlib';
import spdyDictionaries from 'spdy-transport/lib/spdy-transport/protocol/spdy/dictionary';

export const SPDY_VERSION = 3;
export const FLAG_FIN = 0x01;

export const enum ControlType {
  SynStream = 1,
  SynReply = 2,
  RstStream = 3,
  Settings = 4,
  Ping = 6,
  GoAway = 7,
  Headers = 8,
  WindowUpdate = 9,
}

/** RST_STREAM status codes the shim sends. */
export const RST_PROTOCOL_ERROR = 1;
export const RST_REFUSED_STREAM = 3;
export const RST_CANCEL = 5;
export const GOAWAY_PROTOCOL_ERROR = 1;

/** SETTINGS entry ID of the initial stream window (SPDY/3 section 2.6.4). */
export const SETTINGS_INITIAL_WINDOW_SIZE = 7;
/** Each stream's window, and (SPDY/3.1) the session's, until WINDOW_UPDATE or SETTINGS say otherwise. */
export const DEFAULT_INITIAL_WINDOW = 64 * 1024;
/** A window never exceeds 2^31 - 1. */
export const MAX_WINDOW = 0x7fffffff;

type Frame =
  | { kind: 'data'; streamId: number; flags: number; data: Buffer }
  | { kind: 'control'; type: number; flags: number; payload: Buffer };

/** Splits complete frames off the front of `buf`; returns them and the unconsumed rest. */
export function decodeFrames(buf: Buffer): { frames: Frame[]; rest: Buffer } {
  const frames: Frame[] = [];
  let offset = 0;
  while (buf.length - offset >= 8) {
    const first = buf.readUInt32BE(offset);
    const flags = buf.readUInt8(offset + 4);
    const length = buf.readUIntBE(offset + 5, 3);
    if (buf.length - offset - 8 < length) break;
    const payload = buf.subarray(offset + 8, offset + 8 + length);
    if ((first & 0x80000000) !== 0) {
      const version = (first >>> 16) & 0x7fff;
      if (version !== SPDY_VERSION) throw new Error(`SPDY version ${version} is not supported`);
      frames.push({ kind: 'control', type: first & 0xffff, flags, payload });
    } else {
      frames.push({ kind: 'data', streamId: first & 0x7fffffff, flags, data: payload });
    }
    offset += 8 + length;
  }
  return { frames, rest: buf.subarray(offset) };
}

/** A control frame longer than this ends the session; only header blocks are long, and they are bounded too. */
export const MAX_CONTROL_FRAME_PAYLOAD = 128 * 1024;

export class FrameError extends Error {}

/**
 * What FrameReader hands on: whole control frames, and data frames in the pieces they arrived in
 * (`fin` only on a frame's last piece, which may be empty).
 */
export type FrameEvent =
  | { kind: 'control'; type: number; flags: number; payload: Buffer }
  | { kind: 'data'; streamId: number; data: Buffer; fin: boolean };

/**
 * Reads frames from a byte stream as it arrives, holding at most one frame header and one
 * control frame (at most MAX_CONTROL_FRAME_PAYLOAD): a data frame's payload is handed on piece by
 * piece, however long the frame says it is, so a peer cannot make us buffer 16 MiB for one frame.
 * What it hands on may be views of the chunk (data pieces, a control frame's payload when the
 * chunk holds the whole frame); what it keeps past the call never is.
 */
const NO_BYTES = Buffer.alloc(0);

export class FrameReader {
  private head: Buffer = NO_BYTES;
  private control: { type: number; flags: number; length: number; parts: Buffer[]; have: number } | undefined;
  private data: { streamId: number; flags: number; left: number } | undefined;

  /** The events `chunk` completes; throws FrameError on a frame the session cannot take. */
  push(chunk: Buffer): FrameEvent[] {
    const events: FrameEvent[] = [];
    let off = 0;
    while (off < chunk.length) {
      if (this.data) {
        const take = Math.min(this.data.left, chunk.length - off);
        this.data.left -= take;
        const fin = this.data.left === 0 && (this.data.flags & FLAG_FIN) !== 0;
        events.push({ kind: 'data', streamId: this.data.streamId, data: chunk.subarray(off, off + take), fin });
        off += take;
        if (this.data.left === 0) this.data = undefined;
        continue;
      }
      if (this.control) {
        const take = Math.min(this.control.length - this.control.have, chunk.length - off);
        this.control.parts.push(chunk.subarray(off, off + take));
        this.control.have += take;
        off += take;
        if (this.control.have === this.control.length) {
          const { type, flags, parts } = this.control;
          this.control = undefined;
          events.push({ kind: 'control', type, flags, payload: parts.length === 1 ? parts[0]! : Buffer.concat(parts) });
        }
        continue;
      }
      const need = 8 - this.head.length;
      const piece = chunk.subarray(off, off + need);
      // A head cut by the chunk's end is kept as a copy (the chunk may be a lent read).
      this.head = this.head.length === 0 && piece.length === 8 ? piece : Buffer.concat([this.head, piece]);
      off += piece.length;
      if (this.head.length < 8) break;
      const head = this.head;
      this.head = NO_BYTES;
      const first = head.readUInt32BE(0);
      const flags = head.readUInt8(4);
      const length = head.readUIntBE(5, 3);
      if ((first & 0x80000000) !== 0) {
        const version = (first >>> 16) & 0x7fff;
        if (version !== SPDY_VERSION) throw new FrameError(`SPDY version ${version} is not supported`);
        if (length > MAX_CONTROL_FRAME_PAYLOAD) throw new FrameError(`SPDY control frame of ${length} bytes (at most ${MAX_CONTROL_FRAME_PAYLOAD})`);
        const type = first & 0xffff;
        if (length === 0) events.push({ kind: 'control', type, flags, payload: NO_BYTES });
        else this.control = { type, flags, length, parts: [], have: 0 };
      } else {
        const streamId = first & 0x7fffffff;
        if (length === 0) events.push({ kind: 'data', streamId, data: NO_BYTES, fin: (flags & FLAG_FIN) !== 0 });
        else this.data = { streamId, flags, left: length };
      }
    }
    // What is kept for the next chunk is copied: this one may be a lent read, read into again.
    if (this.control) this.control.parts = this.control.parts.map((part) => (part.buffer === chunk.buffer ? Buffer.from(part) : part));
    return events;
  }
}

/** The entries of a SETTINGS payload: ID → value (flags dropped). */
export function parseSettings(payload: Buffer): Map<number, number> {
  const settings = new Map<number, number>();
  if (payload.length < 4) return settings;
  const count = payload.readUInt32BE(0);
  for (let i = 0, off = 4; i < count && off + 8 <= payload.length; i++, off += 8) {
    settings.set(payload.readUInt32BE(off) & 0xffffff, payload.readUInt32BE(off + 4));
  }
  return settings;
}

export function windowUpdatePayload(streamId: number, delta: number): Buffer {
  // Every byte is written: a slice of Node's pool, not an allocation of its own (one per grant).
  const b = Buffer.allocUnsafe(8);
  b.writeUInt32BE(streamId & 0x7fffffff, 0);
  b.writeUInt32BE(delta & 0x7fffffff, 4);
  return b;
}

/** Stream ID and delta of WINDOW_UPDATE. */
export function parseWindowUpdate(payload: Buffer): { streamId: number; delta: number } {
  if (payload.length < 8) throw new FrameError('WINDOW_UPDATE is too short');
  return { streamId: payload.readUInt32BE(0) & 0x7fffffff, delta: payload.readUInt32BE(4) & 0x7fffffff };
}

export function encodeControl(type: ControlType, flags: number, payload: Buffer): Buffer {
  // One buffer, every byte written (small frames come from Node's pool).
  const frame = Buffer.allocUnsafe(8 + payload.length);
  frame.writeUInt32BE((0x8000 | SPDY_VERSION) * 0x10000 + type, 0);
  frame.writeUInt8(flags, 4);
  frame.writeUIntBE(payload.length, 5, 3);
  payload.copy(frame, 8);
  return frame;
}

export function encodeData(streamId: number, flags: number, data: Buffer): Buffer {
  return Buffer.concat([dataFrameHead(streamId, flags, data.length), data]);
}

/**
 * The 8 bytes that go before `length` bytes of data in a data frame: written on their own,
 * ahead of the payload, the payload is not copied.
 */
export function dataFrameHead(streamId: number, flags: number, length: number): Buffer {
  // From Node's shared pool: one small allocation a frame rather than one of its own.
  const head = Buffer.allocUnsafe(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt8(flags, 4);
  head.writeUIntBE(length, 5, 3);
  return head;
}

/** Header names are lower case on the wire; several values of one name are NUL-separated. */
export type HeaderBlock = Record<string, string[]>;

export function encodeHeaderBlock(headers: HeaderBlock): Buffer {
  const parts: Buffer[] = [];
  const count = Buffer.alloc(4);
  const entries = Object.entries(headers);
  count.writeUInt32BE(entries.length, 0);
  parts.push(count);
  for (const [name, values] of entries) {
    for (const s of [name.toLowerCase(), values.join('\0')]) {
      const b = Buffer.from(s, 'utf8');
      const len = Buffer.alloc(4);
      len.writeUInt32BE(b.length, 0);
      parts.push(len, b);
    }
  }
  return Buffer.concat(parts);
}

/**
 * Bounds on one header block, as a peer may send anything: the streaming protocols' blocks hold
 * a handful of short headers (stream type, port, request ID), well under 1 KiB inflated. Values
 * are bounded apart from names: one value splits on NUL into many, and some 100 compressed
 * bytes inflate to a value of 65,520 NULs.
 */
export const MAX_HEADER_BLOCK_BYTES = 64 * 1024;
export const MAX_HEADER_ENTRIES = 128;
/** Values in one block, all names together. */
export const MAX_HEADER_VALUES = 256;

export class HeaderBlockError extends Error {}

export function decodeHeaderBlock(block: Buffer): HeaderBlock {
  if (block.length > MAX_HEADER_BLOCK_BYTES) throw new HeaderBlockError(`SPDY header block is over ${MAX_HEADER_BLOCK_BYTES} bytes`);
  const headers: HeaderBlock = {};
  let offset = 0;
  let values = 0;
  const need = (n: number): void => {
    if (block.length - offset < n) throw new HeaderBlockError('SPDY header block is truncated');
  };
  need(4);
  const count = block.readUInt32BE(offset);
  offset += 4;
  if (count > MAX_HEADER_ENTRIES) throw new HeaderBlockError(`SPDY header block declares ${count} entries (at most ${MAX_HEADER_ENTRIES})`);
  const readBytes = (): Buffer => {
    need(4);
    const len = block.readUInt32BE(offset);
    offset += 4;
    need(len);
    offset += len;
    return block.subarray(offset - len, offset);
  };
  for (let i = 0; i < count; i++) {
    const name = readBytes().toString('utf8').toLowerCase();
    const held = (headers[name] ??= []);
    // Split on NUL bytes (UTF-8 has no other NUL), counting each value before it is made.
    const field = readBytes();
    for (let start = 0; ; ) {
      if (++values > MAX_HEADER_VALUES) throw new HeaderBlockError(`SPDY header block holds over ${MAX_HEADER_VALUES} values`);
      const nul = field.indexOf(0, start);
      held.push(field.toString('utf8', start, nul < 0 ? field.length : nul));
      if (nul < 0) break;
      start = nul + 1;
    }
  }
  return headers;
}

/** Stream ID and header block of SYN_STREAM (the block still compressed). */
export function parseSynStream(payload: Buffer): { streamId: number; compressedHeaders: Buffer } {
  if (payload.length < 10) throw new Error('SYN_STREAM is too short');
  return { streamId: payload.readUInt32BE(0) & 0x7fffffff, compressedHeaders: payload.subarray(10) };
}

export function synReplyPayload(streamId: number, compressedHeaders: Buffer): Buffer {
  const id = Buffer.alloc(4);
  id.writeUInt32BE(streamId & 0x7fffffff, 0);
  return Buffer.concat([id, compressedHeaders]);
}

export function streamIdOf(payload: Buffer): number {
  if (payload.length < 4) throw new Error('control frame is too short');
  return payload.readUInt32BE(0) & 0x7fffffff;
}

export function rstStreamPayload(streamId: number, status: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32BE(streamId & 0x7fffffff, 0);
  b.writeUInt32BE(status, 4);
  return b;
}

export function goAwayPayload(lastStreamId: number, status = 0): Buffer {
  return rstStreamPayload(lastStreamId, status);
}

/**
 * SPDY/3 compresses every header block of one direction with one zlib stream that starts
 * from a fixed dictionary (spdy-transport's copy of it); each block ends with a sync flush.
 */
export class HeaderCodec {
  private readonly inflater = zlib.createInflate({ dictionary: spdyDictionaries[3] });
  private readonly deflater = zlib.createDeflate({ dictionary: spdyDictionaries[3] });
  private chain: Promise<unknown> = Promise.resolve();

  /** Fails with HeaderBlockError past MAX_HEADER_BLOCK_BYTES inflated, without inflating the rest. */
  inflate(compressed: Buffer): Promise<HeaderBlock> {
    return this.serial(async () => decodeHeaderBlock(await flushThrough(this.inflater, compressed, MAX_HEADER_BLOCK_BYTES)));
  }

  deflate(headers: HeaderBlock): Promise<Buffer> {
    return this.serial(() => flushThrough(this.deflater, encodeHeaderBlock(headers)));
  }

  close(): void {
    this.inflater.close();
    this.deflater.close();
  }

  /** zlib streams are stateful: blocks must go through one at a time, in order. */
  private serial<T>(step: () => Promise<T>): Promise<T> {
    const next = this.chain.then(step);
    this.chain = next.catch(() => undefined);
    return next;
  }
}

/** `input` through the stateful stream `z`; past `maxOutput` bytes out, `z` is closed and the promise fails. */
function flushThrough(z: zlib.Inflate | zlib.Deflate, input: Buffer, maxOutput = Infinity): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= maxOutput) {
        out.push(chunk);
        return;
      }
      z.off('data', onData);
      z.off('error', onError);
      // The stream's state is lost with it: the session ends (a compression context cannot be
      // skipped past), and no more of the block is inflated.
      z.close();
      reject(new HeaderBlockError(`SPDY header block inflates past ${maxOutput} bytes`));
    };
    const onError = (err: Error): void => {
      z.off('data', onData);
      reject(err);
    };
    z.on('data', onData);
    z.once('error', onError);
    z.write(input);
    z.flush(zlib.constants.Z_SYNC_FLUSH, () => {
      z.off('data', onData);
      z.off('error', onError);
      resolve(Buffer.concat(out));
    });
  });
}
