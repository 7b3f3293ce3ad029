// ExecSync's output, held once: written as it arrives into the buffer that becomes the encoded
// answer (ExecSyncResponse: stdout = 1, stderr = 2, exit_code = 3), so no chunk list, concat
// or encoder copy stands beside it (each of those held a whole copy: 20 probes printing 20 MB
// took the shim from 75 to 810 MiB, 291 MiB still held 30 s later). stdout and stderr share one
// budget per call, so the answer fits in one 16 MiB gRPC message (kubelet's limit, and the
// shim's); and every call past its first 64 KiB draws on one pool for the node, so that
// concurrent calls hold a bounded amount together. What did not fit is dropped, counted, and
// said at the end of stderr; the command is never made to wait (a pool that made calls wait
// could hold them all half-filled, each waiting on the others, until their timeouts). What is
// kept is copied as it is taken: the pieces are lent reads of Docker's connection
// (../../docker/stream-frames.ts demuxInto), so that no read of it allocates.

/** gRPC's message limit on both sides. */
const MESSAGE_LIMIT = 16 * 1024 * 1024;
/** Room kept for the protobuf framing, the exit code and the truncation notes. */
const RESERVED = 64 * 1024;
/** What stdout and stderr of one ExecSync may hold together. */
export const EXEC_OUTPUT_BUDGET = MESSAGE_LIMIT - RESERVED;
/** What each call may hold without drawing on the node's pool: a probe's whole answer, as a rule (kubelet keeps 10 KiB of it). */
export const EXEC_OUTPUT_OWN_BYTES = 64 * 1024;
/** What all ExecSync calls together may hold past their own 64 KiB each: four whole answers. */
const EXEC_OUTPUT_POOL_BYTES = 64 * 1024 * 1024;
/** The pool is drawn on in steps of this much, not per chunk. */
const DRAW_STEP = 1024 * 1024;
/** A field's tag and a length varint of up to 32 bits. */
const FIELD_HEAD_BYTES = 6;

/** The output bytes all ExecSync calls may hold at once beyond their own share (one per process, on the context). */
export class ExecOutputPool {
  constructor(private free: number = EXEC_OUTPUT_POOL_BYTES) {}

  /** Up to `bytes` of the pool; answers how much was granted. */
  take(bytes: number): number {
    const granted = Math.max(0, Math.min(bytes, this.free));
    this.free -= granted;
    return granted;
  }

  give(bytes: number): void {
    this.free += bytes;
  }

  get available(): number {
    return this.free;
  }
}

type OutputStreamName = 'stdout' | 'stderr';

/** Why bytes were dropped: the call's 16 MiB, or the node's pool being in use by other calls. */
interface Dropped {
  bytes: number;
  byPool: boolean;
}

/**
 * One ExecSync's output, taken piece by piece (`take`). stdout is written into `buffer` after
 * room for its field's head; it starts at 64 KiB and, once that is full, is replaced once by a
 * buffer of the whole budget (whose pages the kernel gives only as they are written). stderr, as
 * a rule short, is kept as copies of its pieces and copied in behind stdout when the answer is
 * encoded.
 */
export class ExecSyncOutput {
  readonly dropped: Record<OutputStreamName, Dropped> = { stdout: { bytes: 0, byPool: false }, stderr: { bytes: 0, byPool: false } };
  private buffer: Buffer = Buffer.allocUnsafe(FIELD_HEAD_BYTES + EXEC_OUTPUT_OWN_BYTES);
  private stdoutBytes = 0;
  private readonly stderrChunks: Buffer[] = [];
  private stderrBytes = 0;
  /** Bytes this call may hold: its own share and what it drew from the pool. */
  private allowance = EXEC_OUTPUT_OWN_BYTES;
  private drawn = 0;
  private released = false;

  constructor(
    private readonly pool: ExecOutputPool,
    private readonly budget: number = EXEC_OUTPUT_BUDGET,
  ) {}

  /** The encoded ExecSyncResponse, and views of its stdout and stderr; gives the pool back. */
  encode(exitCode: number): { bytes: Buffer; stdout: Buffer; stderr: Buffer } {
    const notes = (['stdout', 'stderr'] as const)
      .filter((name) => this.dropped[name].bytes > 0)
      .map((name) => Buffer.from(truncationNote(name, this.dropped[name])));
    const stderrLength = this.stderrBytes + notes.reduce((n, b) => n + b.length, 0);
    const exitField = exitCode === 0 ? NO_BYTES : Buffer.concat([Buffer.from([0x18]), varint(exitCode)]);
    const stdoutHead = this.stdoutBytes === 0 ? NO_BYTES : Buffer.concat([Buffer.from([0x0a]), varint(this.stdoutBytes)]);
    const stderrHead = stderrLength === 0 ? NO_BYTES : Buffer.concat([Buffer.from([0x12]), varint(stderrLength)]);
    const start = FIELD_HEAD_BYTES - stdoutHead.length;
    const stdoutEnd = FIELD_HEAD_BYTES + this.stdoutBytes;
    const size = stdoutEnd + stderrHead.length + stderrLength + exitField.length;
    // In place when the buffer has room behind stdout (it always has once it is the budget's);
    // else a buffer of the answer's size, stdout copied (at most 64 KiB then).
    let out = this.buffer;
    if (out.length < size) {
      out = Buffer.allocUnsafe(size);
      this.buffer.copy(out, FIELD_HEAD_BYTES, FIELD_HEAD_BYTES, stdoutEnd);
    }
    stdoutHead.copy(out, start);
    let at = stdoutEnd;
    at += stderrHead.copy(out, at);
    const stderrStart = at;
    for (const chunk of [...this.stderrChunks, ...notes]) at += chunk.copy(out, at);
    exitField.copy(out, at);
    this.release();
    return { bytes: out.subarray(start, size), stdout: out.subarray(FIELD_HEAD_BYTES, stdoutEnd), stderr: out.subarray(stderrStart, stderrStart + stderrLength) };
  }

  /** Gives back what was drawn from the pool (also when the call failed); safe to call again. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.pool.give(this.drawn);
    this.drawn = 0;
  }

  /** Keeps what fits of `chunk`, copied (it may be a read buffer that is read into again), and counts the rest as dropped. */
  take(name: OutputStreamName, chunk: Buffer): void {
    const keep = this.room(chunk.length);
    if (keep < chunk.length) {
      this.dropped[name].bytes += chunk.length - keep;
      if (this.held + keep < this.budget) this.dropped[name].byPool = true;
    }
    if (keep === 0) return;
    if (name === 'stderr') {
      this.stderrChunks.push(Buffer.from(chunk.subarray(0, keep)));
      this.stderrBytes += keep;
      return;
    }
    const end = FIELD_HEAD_BYTES + this.stdoutBytes + keep;
    if (end > this.buffer.length) {
      const whole = Buffer.allocUnsafeSlow(FIELD_HEAD_BYTES + this.budget + RESERVED);
      this.buffer.copy(whole, 0, 0, FIELD_HEAD_BYTES + this.stdoutBytes);
      this.buffer = whole;
    }
    chunk.copy(this.buffer, FIELD_HEAD_BYTES + this.stdoutBytes, 0, keep);
    this.stdoutBytes += keep;
  }

  private get held(): number {
    return this.stdoutBytes + this.stderrBytes;
  }

  /** How many of `wanted` more bytes this call may keep, drawing on the pool as it needs. */
  private room(wanted: number): number {
    if (this.released) return 0;
    const cap = Math.min(this.budget, this.held + wanted);
    if (cap > this.allowance) {
      const granted = this.pool.take(Math.max(cap - this.allowance, Math.min(DRAW_STEP, this.budget - this.allowance)));
      this.drawn += granted;
      this.allowance += granted;
    }
    return Math.max(0, Math.min(cap, this.allowance) - this.held);
  }
}

const NO_BYTES = Buffer.alloc(0);

/** A protobuf varint; a negative int32 as its 64-bit two's complement, as protobuf encodes it. */
function varint(value: number): Buffer {
  let v = BigInt.asUintN(64, BigInt(value));
  const bytes: number[] = [];
  do {
    const low = Number(v & 0x7fn);
    v >>= 7n;
    bytes.push(v > 0n ? low | 0x80 : low);
  } while (v > 0n);
  return Buffer.from(bytes);
}

/** The note appended to stderr when a stream did not fit. */
export function truncationNote(stream: OutputStreamName, dropped: Dropped): string {
  const why = dropped.byPool
    ? `the node's ExecSync output pool (${EXEC_OUTPUT_POOL_BYTES} bytes) was in use by other calls`
    : `output over ${EXEC_OUTPUT_BUDGET} bytes in all`;
  return `\n[cri-docker-shim: ${why}; ${dropped.bytes} bytes of ${stream} were dropped]\n`;
}
