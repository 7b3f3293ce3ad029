// Docker's json-file log, read directly instead of through Docker's log API: one JSON object a
// line, `{"log":"<text>","stream":"stdout|stderr","time":"<RFC3339Nano>"}`, where a "log"
// ending in "\n" is a whole line and anything else a piece Docker cut (at 16 KiB) or the
// output's unterminated end. With a TTY every line is "stdout". Pure: decoding, where a file
// is expected to be, and what to do at a file's end; the I/O is in json-file-tail.ts.
import * as path from 'node:path';
import { isFullId } from '../conventions/ids';
import { MAX_PIECE_BYTES, type LogRecord, type StreamName } from './cri-format';

/**
 * The longest JSON line held while waiting for its end. Docker's lines carry at most 16 KiB
 * of text, six bytes each when escaped, so ~100 KiB; anything longer is not Docker's and is
 * skipped rather than held.
 */
export const MAX_JSON_LINE_BYTES = 1024 * 1024;
const LF = 0x0a;

/** The records one JSON line gave, and where in the file the line ends. */
interface JsonLogLine {
  records: LogRecord[];
  /** The byte offset right after the line's newline. */
  end: number;
}

/** What a decoder met that was not a log line (the caller logs it). */
export interface JsonLogProblem {
  /** Where the line starts in the file. */
  offset: number;
  reason: string;
}

/**
 * The json-file log's timestamp as the CRI log and Docker's log API write it: UTC with nine
 * fraction digits (Go's RFC3339Nano, which json-file uses, drops trailing zeros).
 */
export function normalizeTimestamp(time: string): string | undefined {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(time);
  if (!m) return undefined;
  const fraction = (m[2] ?? '').padEnd(9, '0');
  if (m[3] === 'Z') return `${m[1]}.${fraction}Z`;
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (!Number.isFinite(ms)) return undefined;
  return `${new Date(ms).toISOString().slice(0, 19)}.${fraction}Z`;
}

/** One json-file line's records: its text in pieces of at most MAX_PIECE_BYTES, as the API decoders cut them. */
export function decodeJsonLogLine(line: string): LogRecord[] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return 'not JSON';
  }
  const { log, stream, time } = (parsed ?? {}) as { log?: unknown; stream?: unknown; time?: unknown };
  if (typeof log !== 'string') return 'no "log" string';
  if (stream !== 'stdout' && stream !== 'stderr') return 'no "stream" of stdout or stderr';
  const timestamp = typeof time === 'string' ? normalizeTimestamp(time) : undefined;
  if (!timestamp) return 'no RFC3339 "time"';
  const complete = log.endsWith('\n');
  let content = Buffer.from(complete ? log.slice(0, -1) : log, 'utf8');
  const records: LogRecord[] = [];
  while (content.length > MAX_PIECE_BYTES) {
    records.push({ timestamp, stream: stream as StreamName, partial: true, content: content.subarray(0, MAX_PIECE_BYTES) });
    content = content.subarray(MAX_PIECE_BYTES);
  }
  records.push({ timestamp, stream: stream as StreamName, partial: !complete, content });
  return records;
}

/**
 * Splits a json-file log read in chunks into lines, from `offset` on. A line without its
 * newline yet (json-file is still writing it) is held until the rest comes, so `offset` is
 * always a line's start: where a restarted reader continues.
 */
export class JsonLogDecoder {
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** Skipping the rest of an over-long line. */
  private skipping = false;

  constructor(private lineStart: number) {}

  /** Where the next line starts (everything before it was handed out or skipped). */
  get offset(): number {
    return this.lineStart;
  }

  /** Where the next chunk is read from. */
  get readPosition(): number {
    return this.lineStart + this.heldBytes;
  }

  /** True while part of a line is held, waiting for its newline. */
  get torn(): boolean {
    return this.heldBytes > 0;
  }

  push(chunk: Buffer, problems: JsonLogProblem[] = []): JsonLogLine[] {
    const out: JsonLogLine[] = [];
    let data = chunk;
    while (data.length > 0) {
      const nl = data.indexOf(LF);
      if (nl < 0) {
        this.hold(data, problems);
        break;
      }
      const tail = data.subarray(0, nl);
      data = data.subarray(nl + 1);
      const start = this.lineStart;
      const length = this.heldBytes + tail.length;
      this.lineStart = start + length + 1;
      if (this.skipping || length > MAX_JSON_LINE_BYTES) {
        if (!this.skipping) problems.push({ offset: start, reason: `a line longer than ${MAX_JSON_LINE_BYTES} bytes` });
        this.skipping = false;
        this.clear();
        continue;
      }
      const line = this.heldBytes === 0 ? tail.toString('utf8') : Buffer.concat([...this.held, tail]).toString('utf8');
      this.clear();
      const records = decodeJsonLogLine(line);
      if (typeof records === 'string') {
        if (line !== '') problems.push({ offset: start, reason: records });
        out.push({ records: [], end: this.lineStart });
      } else {
        out.push({ records, end: this.lineStart });
      }
    }
    return out;
  }

  /** Starts again at `offset` (a file truncated under us, or the next file), dropping what is held. */
  reset(offset: number): void {
    this.lineStart = offset;
    this.skipping = false;
    this.clear();
  }

  private hold(data: Buffer, problems: JsonLogProblem[]): void {
    if (!this.skipping && this.heldBytes + data.length > MAX_JSON_LINE_BYTES) {
      problems.push({ offset: this.lineStart, reason: `a line longer than ${MAX_JSON_LINE_BYTES} bytes` });
      this.skipping = true;
      this.held = [];
    }
    // An over-long line's bytes are counted (so offsets stay right) but not kept.
    if (!this.skipping) this.held.push(Buffer.from(data));
    this.heldBytes += data.length;
  }

  private clear(): void {
    this.held = [];
    this.heldBytes = 0;
  }
}

/**
 * Where Docker keeps the json-file log of container `id` under its root directory. The shim
 * opens only this path for a container (LogPath comes from Docker, but a file the shim runs
 * as root to read must not be anything else).
 */
export function expectedJsonLogPath(dockerRootDir: string, id: string): string | undefined {
  if (!path.isAbsolute(dockerRootDir) || !isFullId(id)) return undefined;
  return path.join(path.resolve(dockerRootDir), 'containers', id, `${id}-json.log`);
}

/** A file's identity: a renamed file keeps it, a new file at the path has another. */
export interface FileIdentity {
  device: bigint;
  inode: bigint;
}

function sameFile(a: FileIdentity, b: FileIdentity): boolean {
  return a.device === b.device && a.inode === b.inode;
}

/**
 * What a reader at the end of the file it has open does next:
 * - `switch`: the path holds another file (json-file rotated: the old one was renamed to
 *   `.1` and a new one made); finish the open one through its descriptor, then open the path;
 * - `restart`: the file is shorter than what was read (truncated under us): read it from 0;
 * - `done`: the container exited (so json-file wrote its last line) and all is read;
 * - `wait`: for the next change in the container's directory.
 */
type EndOfFileAction = 'switch' | 'restart' | 'done' | 'wait';

export function afterEndOfFile(o: {
  reading: FileIdentity & { size: bigint };
  /** The file now at the log path; undefined while there is none (mid-rotation, or removed). */
  atPath: FileIdentity | undefined;
  /** How far the open file was read. */
  position: number;
  exited: boolean;
}): EndOfFileAction {
  if (o.atPath && !sameFile(o.atPath, o.reading)) return 'switch';
  if (o.reading.size < BigInt(o.position)) return 'restart';
  return o.exited ? 'done' : 'wait';
}

/** A json-file log found on disk while resuming: the path itself (index 0) or its rotated copy `.<index>`. */
export interface LogGeneration extends FileIdentity {
  index: number;
  size: bigint;
}

/** Where a resumed reader starts: the generations to read, oldest first, and the offset in the first. */
interface ResumeRead {
  /** Indexes into the generations given, oldest first; the last is the live file. */
  order: number[];
  offset: number;
  /** False when the saved position was not found: reading starts at the oldest file's start. */
  exact: boolean;
}

/**
 * Plans a resumed read from the saved position (file identity and offset) and the files found
 * at the path and its rotated copies (newest first, as `.1`, `.2`... are older). The saved
 * file, once found, is read from its offset, and every newer one whole; without it (never
 * saved, or rotated out of existence) every file found is read from the start and the CRI
 * file's tail decides which records are new.
 */
export function planResumeRead(found: LogGeneration[], saved: (FileIdentity & { offset: number }) | undefined): ResumeRead {
  const newestFirst = [...found].sort((a, b) => a.index - b.index);
  const at = saved ? newestFirst.findIndex((g) => sameFile(g, saved) && g.size >= BigInt(saved.offset)) : -1;
  if (at >= 0) {
    return { order: newestFirst.slice(0, at + 1).reverse().map((g) => g.index), offset: saved!.offset, exact: true };
  }
  return { order: newestFirst.reverse().map((g) => g.index), offset: 0, exact: false };
}
