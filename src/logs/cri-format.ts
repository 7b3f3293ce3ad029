// The CRI log format kubelet and crictl read, and the decoding of Docker's log stream into
// the records written in it. One CRI line per record:
//   <RFC3339Nano timestamp> <stdout|stderr> <P|F> <text>\n
// where P marks a piece of a longer line and F its last piece (or a whole line).
// Docker's log API (with timestamps) prefixes each message with its time; without a TTY each
// message is one multiplexed frame, and Docker already splits long lines into partial
// messages (no trailing newline). Pure, and bounded: a decoder never holds more than one
// record piece (MAX_PIECE_BYTES) plus a timestamp.
import { FrameSplitter } from '../docker/stream-frames';

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

/**
 * Docker's multiplexed stream (container without a TTY): each frame one message
 * (../docker/stream-frames.ts). Should the stream turn out not to be multiplexed, the rest is
 * read as a raw one.
 */
export class MultiplexedLogDecoder implements LogDecoder {
  private readonly frames = new FrameSplitter();
  private current: MessageAssembler | undefined;
  private raw: RawLogDecoder | undefined;

  push(chunk: Buffer): LogRecord[] {
    const out: LogRecord[] = [];
    this.frames.push(chunk, (stream, data, ends) => {
      if (this.frames.raw) {
        this.raw ??= new RawLogDecoder();
        for (const record of this.raw.push(data)) out.push(record);
        return;
      }
      this.current ??= new MessageAssembler(stream);
      this.current.push(data, out);
      if (ends) {
        this.current.finish(out);
        this.current = undefined;
      }
    });
    return out;
  }

  end(): LogRecord[] {
    const out: LogRecord[] = [];
    this.current?.finish(out);
    this.current = undefined;
    if (this.raw) for (const record of this.raw.end()) out.push(record);
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

/** One stream's latest run of records sharing one timestamp (the pieces of one line). */
interface StreamRun {
  timestamp: string;
  count: number;
}

/**
 * Where writing stopped: the last record's stream and timestamp, and how many records of that
 * stream carry that timestamp. Docker stamps every piece of a long line with one time, and
 * records of the other stream can come between the pieces, so runs are counted per stream.
 * `other` is the other stream's run when its last record left a line unfinished: the rest of
 * that line goes on counting from there. A point saved without `stream` (by an older shim)
 * matches its timestamp in either stream.
 */
export interface ResumePoint extends StreamRun {
  stream?: StreamName;
  other?: StreamRun;
}

function otherStream(stream: StreamName): StreamName {
  return stream === 'stdout' ? 'stderr' : 'stdout';
}

/** A stream's run, and whether its last record is a piece of an unfinished line. */
interface OpenRun extends StreamRun {
  open: boolean;
}

function pointOf(stream: StreamName, runs: Partial<Record<StreamName, OpenRun>>): ResumePoint {
  const run = runs[stream]!;
  const other = runs[otherStream(stream)];
  return {
    timestamp: run.timestamp,
    count: run.count,
    stream,
    ...(other?.open ? { other: { timestamp: other.timestamp, count: other.count } } : {}),
  };
}

/**
 * How far a replayed record's time may run ahead of the resume point before we give up
 * looking for the point (Docker's own copy may have been rotated away meanwhile).
 */
const SEEK_GIVE_UP_MS = 2_000;

/**
 * Decides which records of a replayed stream are new. The file mirrors Docker's stream order,
 * and that order is not quite time order (stdout and stderr are stamped separately, and the
 * pieces of a long line all carry the line's first time), so the filter does not compare
 * times: it skips records until it has passed the point's record (the count-th record of
 * that stream with that timestamp), and lets everything after through.
 */
export class ResumeFilter {
  private search: { point: ResumePoint; ms: number; matched: number } | undefined;
  private readonly runs: Partial<Record<StreamName, OpenRun>> = {};
  /** The stream of the last record written; undefined until one is known. */
  private lastStream: StreamName | undefined;
  /** The point given, while it names no stream and no record has placed us yet. */
  private unplaced: ResumePoint | undefined;

  /**
   * `seek: false` places the filter at the point without looking for it: for a reader that
   * knows it continues right after the point's record (a json-file offset saved with it).
   */
  constructor(resume: ResumePoint | undefined, { seek = true }: { seek?: boolean } = {}) {
    if (resume?.stream) {
      // Whether these runs end open is not recorded; taking them as open only keeps them in
      // later points, which is harmless.
      this.runs[resume.stream] = { timestamp: resume.timestamp, count: resume.count, open: true };
      if (resume.other) this.runs[otherStream(resume.stream)] = { ...resume.other, open: true };
      this.lastStream = resume.stream;
    } else if (resume) {
      this.unplaced = { timestamp: resume.timestamp, count: resume.count };
    }
    if (seek) this.seek();
  }

  /** Looks for the current point again (before replaying a stream from `sinceSeconds`). */
  seek(): void {
    const point = this.current();
    this.search = point ? { point, ms: Date.parse(point.timestamp), matched: 0 } : undefined;
  }

  /** True while records are being skipped in search of the point's record. */
  get seeking(): boolean {
    return this.search !== undefined;
  }

  /** True when the record has not been written before; the point then moves past it. */
  accept(r: LogRecord): boolean {
    const s = this.search;
    if (s) {
      const sameStream = s.point.stream === undefined || s.point.stream === r.stream;
      if (sameStream && r.timestamp === s.point.timestamp) {
        s.matched++;
        if (s.matched >= s.point.count) {
          // The point's own record: everything after it is new.
          this.search = undefined;
          this.runs[r.stream] = { timestamp: r.timestamp, count: s.matched, open: r.partial };
          this.lastStream = r.stream;
          this.unplaced = undefined;
        }
        return false;
      }
      // The run was shorter in the replay than in the file (only a record of the point's own
      // stream can tell), or the replay is past the point's time without having met it.
      const runEnded = s.matched > 0 && sameStream;
      const tooFar = s.matched === 0 && Date.parse(r.timestamp) > s.ms + SEEK_GIVE_UP_MS;
      if (!runEnded && !tooFar) return false;
      this.search = undefined;
    }
    const run = this.runs[r.stream];
    if (run && run.timestamp === r.timestamp) {
      run.count++;
      run.open = r.partial;
    } else {
      this.runs[r.stream] = { timestamp: r.timestamp, count: 1, open: r.partial };
    }
    this.lastStream = r.stream;
    this.unplaced = undefined;
    return true;
  }

  current(): ResumePoint | undefined {
    if (this.lastStream) return pointOf(this.lastStream, this.runs);
    return this.unplaced ? { ...this.unplaced } : undefined;
  }
}

/**
 * Whether two points name the same last record (a file's tail against a saved point). The
 * other stream's run is left out: a filter restored from a point takes it as open, the file's
 * tail may not, and any record written after the point changes the last record's run anyway.
 */
export function samePoint(a: ResumePoint | undefined, b: ResumePoint | undefined): boolean {
  if (!a || !b) return a === b;
  return a.stream === b.stream && a.timestamp === b.timestamp && a.count === b.count;
}

/**
 * The resume point a CRI log file's tail shows (see ResumePoint). `fromStart` says the text
 * begins at the file's start (else the first line may be cut and is ignored).
 */
export function resumePointFromTail(text: string, fromStart: boolean): ResumePoint | undefined {
  const lines = text.split('\n');
  // Only newline-terminated lines were written whole.
  lines.pop();
  if (!fromStart) lines.shift();
  const parsed = lines.map(parseCriLine).filter((l): l is CriLine => l !== undefined);
  const last = parsed.at(-1);
  if (!last) return undefined;
  const runs: Partial<Record<StreamName, OpenRun>> = {};
  for (const stream of [last.stream, otherStream(last.stream)]) {
    let run: OpenRun | undefined;
    for (let i = parsed.length - 1; i >= 0; i--) {
      const line = parsed[i]!;
      if (line.stream !== stream) continue;
      if (!run) run = { timestamp: line.timestamp, count: 1, open: line.partial };
      else if (line.timestamp === run.timestamp) run.count++;
      else break;
    }
    runs[stream] = run;
  }
  return pointOf(last.stream, runs);
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
