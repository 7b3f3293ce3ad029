// Docker's multiplexed stream: what exec, attach and logs answer for a container without a TTY.
// Frames of an 8-byte header (the stream: 0 stdin, 1 stdout, 2 stderr, 3 Docker's own error
// text, moby's stdcopy.Systemerr, which its log endpoint writes in band; 3 bytes of zero; a
// 32-bit big-endian length) and the payload. The one decoder of it, for exec and attach
// (streaming/docker-output.ts), ExecSync (DockerClient.demux) and logs (logs/cri-format.ts).
//
// A header naming no known stream means the stream was not multiplexed after all (a TTY that
// the caller did not expect): from that header on, everything is stdout as is, the header's
// bytes included. Docker itself writes only known streams in a multiplexed stream, so nothing
// multiplexed is lost by this; read as frames instead, plain text would be taken for lengths of
// up to 4 GiB and swallowed or split at random. (docker-modem's demuxStream and the exec output
// did this; the log decoder took any header as a frame of stdout.)
import type { Readable } from 'node:stream';
import { HijackedConnection } from './hijack';

const FRAME_HEADER_BYTES = 8;

export type FrameStream = 'stdout' | 'stderr';

interface FrameHeader {
  /** Where the payload goes: stdin (which Docker never sends back) and stdout to stdout, Docker's errors with stderr. */
  stream: FrameStream;
  /** The payload's length in bytes. */
  length: number;
}

/** The header `header` starts with (FRAME_HEADER_BYTES long); undefined when it names no known stream. */
export function parseFrameHeader(header: Buffer): FrameHeader | undefined {
  const type = header[0]!;
  if (type > 3) return undefined;
  return { stream: type >= 2 ? 'stderr' : 'stdout', length: header.readUInt32BE(4) };
}

/**
 * A piece of payload, handed on as it arrives whatever length its header claims: `ends` when it
 * completes its frame. Empty frames give no piece. Once the stream turned out not to be
 * multiplexed (`FrameSplitter.raw`), every piece is stdout and `ends` is false.
 */
export type FramePieceListener = (stream: FrameStream, data: Buffer, ends: boolean) => void;

const NO_BYTES = Buffer.alloc(0);

/** Splits a multiplexed stream into its payloads, chunk by chunk; holds at most one partial header. */
export class FrameSplitter {
  private head: Buffer = NO_BYTES;
  private stream: FrameStream = 'stdout';
  private left = 0;

  /** `raw`: the stream is not multiplexed (a TTY): all of it is stdout. */
  constructor(private isRaw = false) {}

  /** True when the stream is not multiplexed: from the start, or since a header named no known stream. */
  get raw(): boolean {
    return this.isRaw;
  }

  /** Hands each payload piece of `chunk` to `onPiece`, in order. */
  push(chunk: Buffer, onPiece: FramePieceListener): void {
    if (this.isRaw) {
      if (chunk.length > 0) onPiece('stdout', chunk, false);
      return;
    }
    let off = 0;
    while (off < chunk.length) {
      if (this.left > 0) {
        const take = Math.min(this.left, chunk.length - off);
        this.left -= take;
        onPiece(this.stream, chunk.subarray(off, off + take), this.left === 0);
        off += take;
        continue;
      }
      const part = chunk.subarray(off, off + FRAME_HEADER_BYTES - this.head.length);
      this.head = this.head.length === 0 ? part : Buffer.concat([this.head, part]);
      off += part.length;
      // A header cut by the chunk's end is kept as a copy: the chunk may be a lent read, whose
      // buffer is read into again once it is given back (../docker/hijack.ts).
      if (this.head.length < FRAME_HEADER_BYTES) {
        if (this.head.buffer === chunk.buffer) this.head = Buffer.from(this.head);
        return;
      }
      const head = this.head;
      this.head = NO_BYTES;
      const header = parseFrameHeader(head);
      if (!header) {
        this.isRaw = true;
        onPiece('stdout', Buffer.concat([head, chunk.subarray(off)]), false);
        return;
      }
      this.stream = header.stream;
      this.left = header.length;
    }
  }
}

/**
 * Hands a multiplexed stream's payloads to `take` as they arrive, without waiting: for a sink
 * that copies what it keeps before it returns (ExecSync's capped buffer). From Docker's hijacked
 * connection the reads are lent (./hijack.ts), each read's buffer read into again once `take`
 * returned: a read of a plain Duplex is a fresh 64 KiB copy, and 20 ExecSyncs printing 20 MB
 * left malloc's heap 20-80 MiB larger (freed, and never given back: glibc gives back only its
 * top), against ~5 MiB lent (issue 42).
 */
export function demuxInto(source: Readable, take: FramePieceListener): void {
  const frames = new FrameSplitter();
  if (source instanceof HijackedConnection) {
    source.lendReads((data, giveBack) => {
      frames.push(data, take);
      giveBack(true);
    });
    return;
  }
  source.on('data', (chunk: Buffer) => frames.push(chunk, take));
}
