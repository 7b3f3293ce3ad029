// The CRI log format kubelet and crictl read, and the decoding of Docker's log stream into
// the records written in it. One CRI line per record:
//   <RFC3339Nano timestamp> <stdout|stderr> <P|F> <text>\n
// where P marks a piece of a longer line and F its last piece (or a whole line).
// Docker's log API (with timestamps) prefixes each message with its time; without a TTY each
// message is one multiplexed frame, and Docker already splits long lines into partial
// messages (no trailing newline). Pure, and bounded: a decoder never holds more than one
// record piece (MAX_PIECE_BYTES) plus a timestamp.
export type StreamName = 'stdout' | 'stderr';

export interface LogRecord {
  /** Docker's RFC3339Nano timestamp, always with nine fraction digits, in UTC. */
  timestamp: string;
  stream: StreamName;
  /** True when the line continues in the next record. */
  partial: boolean;
  content: Buffer;
}

/** The largest piece one record carries; longer runs without a newline become P records. */
export const MAX_PIECE_BYTES = 16 * 1024;
const MAX_TIMESTAMP_BYTES = 64;
const HEADER_BYTES = 8;

export function encodeCriLine(r: LogRecord): Buffer {
  const head = Buffer.from(`${r.timestamp} ${r.stream} ${r.partial ? 'P' : 'F'} `, 'utf8');
  return Buffer.concat([head, r.content, NEWLINE]);
}

const NEWLINE = Buffer.from('\n');
const SPACE = 0x20;
const LF = 0x0a;

/** A parsed CRI line (for resuming and for tests). */
export interface CriLine {
  timestamp: string;
  stream: StreamName;
  partial: boolean;
  content: string;
}

export function parseCriLine(line: string): CriLine | undefined {
  const m = /^(\S+) (stdout|stderr) ([PF]) (.*)$/s.exec(line);
  return m ? { timestamp: m[1]!, stream: m[2] as StreamName, partial: m[3] === 'P', content: m[4]! } : undefined;
}

/**
 * Gathers one message: its timestamp (up to the first space) and then its content, handing
 * out full pieces as partial records. The last byte is held back from a piece so that the
 * message's final record can tell a newline-terminated line from a cut one.
 */
class MessageAssembler {
  private timestamp = '';
  private tsBytes: number[] = [];
  private inContent = false;
  private chunks: Buffer[] = [];
  private length = 0;

  constructor(private readonly stream: StreamName) {}

  get empty(): boolean {
    return !this.inContent && this.tsBytes.length === 0;
  }

  /** Feeds message bytes; returns full pieces that are ready. */
  push(data: Buffer, out: LogRecord[]): void {
    let i = 0;
    while (!this.inContent && i < data.length) {
      const b = data[i++]!;
      if (b === SPACE) {
        this.timestamp = Buffer.from(this.tsBytes).toString('latin1');
        this.inContent = true;
      } else if (this.tsBytes.length < MAX_TIMESTAMP_BYTES) {
        this.tsBytes.push(b);
      }
    }
    if (i >= data.length) return;
    const rest = data.subarray(i);
    this.chunks.push(rest);
    this.length += rest.length;
    while (this.length > MAX_PIECE_BYTES) {
      const all = Buffer.concat(this.chunks);
      out.push({ timestamp: this.timestamp, stream: this.stream, partial: true, content: all.subarray(0, MAX_PIECE_BYTES) });
      const left = all.subarray(MAX_PIECE_BYTES);
      this.chunks = [left];
      this.length = left.length;
    }
  }

  /** Ends the message: its last record, F when it ended with a newline (which is dropped). */
  finish(out: LogRecord[]): void {
    if (this.empty) return;
    let content = Buffer.concat(this.chunks);
    const complete = content.length > 0 && content[content.length - 1] === LF;
    if (complete) content = content.subarray(0, content.length - 1);
    out.push({ timestamp: this.timestamp, stream: this.stream, partial: !complete, content });
    this.timestamp = '';
    this.tsBytes = [];
    this.inContent = false;
    this.chunks = [];
    this.length = 0;
  }
}

export interface LogDecoder {
  /** Records completed by this chunk of Docker's log stream. */
  push(chunk: Buffer): LogRecord[];
  /** Records still held when the stream ends. */
  end(): LogRecord[];
}

/** Docker's multiplexed stream (container without a TTY): 8-byte header, then one message. */
export class MultiplexedLogDecoder implements LogDecoder {
  private header = Buffer.alloc(0);
  private remaining = 0;
  private current: MessageAssembler | undefined;

  push(chunk: Buffer): LogRecord[] {
    const out: LogRecord[] = [];
    let data = chunk;
    while (data.length > 0) {
      if (this.remaining === 0) {
        const need = HEADER_BYTES - this.header.length;
        this.header = Buffer.concat([this.header, data.subarray(0, need)]);
        data = data.subarray(need);
        if (this.header.length < HEADER_BYTES) break;
        const stream: StreamName = this.header[0] === 2 ? 'stderr' : 'stdout';
        this.remaining = this.header.readUInt32BE(4);
        this.header = Buffer.alloc(0);
        this.current = new MessageAssembler(stream);
        if (this.remaining === 0) continue;
      }
      const take = Math.min(this.remaining, data.length);
      this.current!.push(data.subarray(0, take), out);
      this.remaining -= take;
      data = data.subarray(take);
      if (this.remaining === 0) this.current!.finish(out);
    }
    return out;
  }

  end(): LogRecord[] {
    const out: LogRecord[] = [];
    this.current?.finish(out);
    this.current = undefined;
    this.remaining = 0;
    return out;
  }
}

/** Docker's raw stream (container with a TTY): newline-separated messages, all stdout. */
export class RawLogDecoder implements LogDecoder {
  private current = new MessageAssembler('stdout');

  push(chunk: Buffer): LogRecord[] {
    const out: LogRecord[] = [];
    let data = chunk;
    while (data.length > 0) {
      const nl = data.indexOf(LF);
      if (nl < 0) {
        this.current.push(data, out);
        break;
      }
      this.current.push(data.subarray(0, nl + 1), out);
      this.current.finish(out);
      data = data.subarray(nl + 1);
    }
    return out;
  }

  end(): LogRecord[] {
    const out: LogRecord[] = [];
    this.current.finish(out);
    return out;
  }
}

/**
 * Where writing stopped: the last record's timestamp and how many records with exactly that
 * timestamp end the file (Docker gives every piece of one long line the same time).
 */
export interface ResumePoint {
  timestamp: string;
  count: number;
}

/**
 * How far a replayed record's time may run ahead of the resume point before we give up
 * looking for the point (Docker's own copy may have been rotated away meanwhile).
 */
const SEEK_GIVE_UP_MS = 2_000;

/**
 * Decides which records of a replayed stream are new. The file mirrors Docker's stream order,
 * and that order is not quite time order (stdout and stderr are stamped separately), so the
 * filter does not compare times: it skips records until it has passed the resume point's run
 * of records in the stream, and lets everything after through.
 */
export class ResumeFilter {
  private seeking: { point: ResumePoint; ms: number; matched: number } | undefined;
  private last: ResumePoint | undefined;

  constructor(resume: ResumePoint | undefined) {
    this.last = resume ? { ...resume } : undefined;
    this.seek();
  }

  /** Looks for the current point again (before replaying a stream from `sinceSeconds`). */
  seek(): void {
    this.seeking = this.last ? { point: { ...this.last }, ms: Date.parse(this.last.timestamp), matched: 0 } : undefined;
  }

  /** True when the record has not been written before; the point then moves past it. */
  accept(r: LogRecord): boolean {
    const s = this.seeking;
    if (s) {
      if (r.timestamp === s.point.timestamp) {
        s.matched++;
        if (s.matched >= s.point.count) this.seeking = undefined;
        return false;
      }
      const runEnded = s.matched > 0;
      const tooFar = Date.parse(r.timestamp) > s.ms + SEEK_GIVE_UP_MS;
      if (!runEnded && !tooFar) return false;
      this.seeking = undefined;
    }
    if (this.last && this.last.timestamp === r.timestamp) this.last.count++;
    else this.last = { timestamp: r.timestamp, count: 1 };
    return true;
  }

  current(): ResumePoint | undefined {
    return this.last ? { ...this.last } : undefined;
  }
}

/**
 * The resume point a CRI log file's tail shows: its last timestamp and how many lines at its
 * end carry it. `fromStart` says the text begins at the file's start (else the first line may
 * be cut and is ignored).
 */
export function resumePointFromTail(text: string, fromStart: boolean): ResumePoint | undefined {
  const lines = text.split('\n');
  // Only newline-terminated lines were written whole.
  lines.pop();
  if (!fromStart) lines.shift();
  let point: ResumePoint | undefined;
  for (let i = lines.length - 1; i >= 0; i--) {
    const parsed = parseCriLine(lines[i]!);
    if (!parsed) continue;
    if (!point) point = { timestamp: parsed.timestamp, count: 1 };
    else if (parsed.timestamp === point.timestamp) point.count++;
    else break;
  }
  return point;
}

/**
 * Docker's `since` for replaying from a point: a second early, as records just after the
 * point in the stream may carry slightly earlier times.
 */
export function sinceSeconds(point: ResumePoint | undefined): number {
  if (!point) return 0;
  const ms = Date.parse(point.timestamp);
  return Number.isFinite(ms) ? Math.max(0, Math.floor(ms / 1000) - 1) : 0;
}
