// Sinks for ExecSync's output streams that share one byte budget and count what did not fit,
// so a command that prints without end costs bounded memory and the answer still fits in one
// gRPC message (kubelet's limit, and the shim's, is 16 MiB for the whole message).
import { Writable } from 'node:stream';

/** gRPC's message limit on both sides. */
const MESSAGE_LIMIT = 16 * 1024 * 1024;
/** Room kept for the protobuf framing, the exit code and the truncation notes. */
const RESERVED = 64 * 1024;
/** What stdout and stderr of one ExecSync may hold together. */
export const EXEC_OUTPUT_BUDGET = MESSAGE_LIMIT - RESERVED;

export class OutputBudget {
  constructor(public remaining: number = EXEC_OUTPUT_BUDGET) {}
}

export class CappedOutput extends Writable {
  private readonly chunks: Buffer[] = [];
  dropped = 0;

  constructor(private readonly budget: OutputBudget) {
    super();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const keep = Math.min(chunk.length, this.budget.remaining);
    if (keep > 0) {
      this.chunks.push(chunk.subarray(0, keep));
      this.budget.remaining -= keep;
    }
    this.dropped += chunk.length - keep;
    callback();
  }

  contents(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** The note appended to stderr when a stream did not fit. */
export function truncationNote(stream: 'stdout' | 'stderr', dropped: number): string {
  return `\n[cri-docker-shim: output over ${EXEC_OUTPUT_BUDGET} bytes in all; ${dropped} bytes of ${stream} were dropped]\n`;
}
