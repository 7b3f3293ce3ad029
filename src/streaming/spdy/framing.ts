// SPDY/3 frames as the Kubernetes clients (Go's spdystream) speak them: control frames with a
// zlib-compressed name/value block, and data frames. Encoding and decoding of the frame
// layout is pure; the stateful header compression lives in HeaderCodec.
import * as zlib from 'node:zlib';
import spdyDictionaries from 'spdy-transport/lib/spdy-transport/protocol/spdy/dictionary';

export const SPDY_VERSION = 3;
export const FLAG_FIN = 0x01;
export const FLAG_UNIDIRECTIONAL = 0x02;

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

export type Frame =
  | { kind: 'data'; streamId: number; flags: number; data: Buffer }
  | { kind: 'control'; type: number; flags: number; payload: Buffer };

/** Frames are at most 16 MiB (24-bit length); we refuse anything larger than this before buffering it. */
export const MAX_FRAME_PAYLOAD = 0xffffff;

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

export function encodeControl(type: ControlType, flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE((0x8000 | SPDY_VERSION) * 0x10000 + type, 0);
  head.writeUInt8(flags, 4);
  head.writeUIntBE(payload.length, 5, 3);
  return Buffer.concat([head, payload]);
}

export function encodeData(streamId: number, flags: number, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt8(flags, 4);
  head.writeUIntBE(data.length, 5, 3);
  return Buffer.concat([head, data]);
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
 * a handful of short headers (stream type, port, request ID), well under 1 KiB inflated.
 */
export const MAX_HEADER_BLOCK_BYTES = 64 * 1024;
export const MAX_HEADER_ENTRIES = 128;

export class HeaderBlockError extends Error {}

export function decodeHeaderBlock(block: Buffer): HeaderBlock {
  if (block.length > MAX_HEADER_BLOCK_BYTES) throw new HeaderBlockError(`SPDY header block is over ${MAX_HEADER_BLOCK_BYTES} bytes`);
  const headers: HeaderBlock = {};
  let offset = 0;
  const need = (n: number): void => {
    if (block.length - offset < n) throw new HeaderBlockError('SPDY header block is truncated');
  };
  need(4);
  const count = block.readUInt32BE(offset);
  offset += 4;
  if (count > MAX_HEADER_ENTRIES) throw new HeaderBlockError(`SPDY header block declares ${count} entries (at most ${MAX_HEADER_ENTRIES})`);
  const readString = (): string => {
    need(4);
    const len = block.readUInt32BE(offset);
    offset += 4;
    need(len);
    const s = block.toString('utf8', offset, offset + len);
    offset += len;
    return s;
  };
  for (let i = 0; i < count; i++) {
    const name = readString().toLowerCase();
    const values = readString().split('\0');
    const held = (headers[name] ??= []);
    for (const v of values) held.push(v);
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
