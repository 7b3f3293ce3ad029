// A sink for one output stream of ExecSync that keeps at most `limit` bytes and counts the
// rest, so a command that prints without end costs bounded memory.
import { Writable } from 'node:stream';

/** kubelet's own cap on an exec's output, per stream. */
export const EXEC_OUTPUT_LIMIT = 16 * 1024 * 1024;

export class CappedOutput extends Writable {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  dropped = 0;

  constructor(private readonly limit: number = EXEC_OUTPUT_LIMIT) {
    super();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const room = this.limit - this.kept;
    if (room > 0) {
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.chunks.push(part);
      this.kept += part.length;
    }
    this.dropped += Math.max(0, chunk.length - Math.max(room, 0));
    callback();
  }

  contents(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** The note appended to stderr when a stream went over the cap. */
export function truncationNote(stream: 'stdout' | 'stderr', dropped: number, limit: number): string {
  return `\n[cri-docker-shim: ${stream} exceeded ${limit} bytes; ${dropped} bytes were dropped]\n`;
}
