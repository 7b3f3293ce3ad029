// Follows one container's json-file log on disk, instead of holding a Docker log stream open:
// dockerd keeps nothing per follower, and the shim one inotify watch (on the container's
// directory) and one open descriptor per file it is reading. Node's fs.watch goes through
// libuv, which adds every watch to one inotify instance per event loop, so all followers
// together use a single instance of the shim's own (Docker's reader took one per stream, and
// fell back to polling every file past fs.inotify.max_user_instances).
//
// The directory, not the file, is watched: json-file's rotation renames the file and makes a
// new one, and Docker rewrites config.v2.json there when the container's state changes (its
// exit among them), which is when the container is asked whether it still runs (as it is when
// the follower is nudged: the state cache applied the end of its run). Reading is in chunks of
// at most CHUNK_BYTES, the next only after the last one's records are written.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DockerClient } from '../docker/client';
import { errorMessage } from '../errors';
import type { Logger } from '../util/logger';
import type { LogRecord } from './cri-format';
import type { JsonLogPosition } from './follower-records';
import { afterEndOfFile, JsonLogDecoder, planResumeRead, type FileIdentity, type JsonLogProblem, type LogGeneration } from './json-file';

const CHUNK_BYTES = 64 * 1024;
/** Rotated copies looked at when resuming (`.1` ... `.9`; the shim's containers keep one). */
const MAX_ROTATED = 9;
const READ_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

interface JsonLogTailDeps {
  containerId: string;
  /** The json-file log, checked to be where Docker keeps this container's (expectedJsonLogPath). */
  jsonLogPath: string;
  /**
   * Where whether the container still runs is read: the state cache's document (no request),
   * which shows the exit once Docker's `die` event is applied, after json-file wrote its last line.
   */
  dockerCached: Pick<DockerClient, 'inspectContainer'>;
  log: Logger;
  signal: AbortSignal;
  /** Where to continue: the position saved with the last record written. */
  saved: JsonLogPosition | undefined;
  /** Told once, before the first write, whether reading continues at `saved` (else at a file's start). */
  starting(exact: boolean): void;
  /** Writes the records of lines that end at `position` (in order, the next call after this resolves). */
  write(records: LogRecord[], position: JsonLogPosition): Promise<void>;
}

interface OpenLog {
  handle: fs.promises.FileHandle;
  id: FileIdentity;
}

function positionOf(file: OpenLog, offset: number): JsonLogPosition {
  return { device: file.id.device.toString(), inode: file.id.inode.toString(), offset };
}

async function openLog(file: string): Promise<OpenLog | undefined> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file, READ_FLAGS);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const st = await handle.stat({ bigint: true });
  if (!st.isFile()) {
    await handle.close();
    return undefined;
  }
  return { handle, id: { device: st.dev, inode: st.ino } };
}

async function identityAt(file: string): Promise<FileIdentity | undefined> {
  try {
    const st = await fs.promises.lstat(file, { bigint: true });
    return { device: st.dev, inode: st.ino };
  } catch {
    return undefined;
  }
}

export class JsonLogTail {
  private readonly base: string;
  private readonly decoder = new JsonLogDecoder(0);
  /** Something in the directory changed since the last look (or the tail starts). */
  private woken = true;
  /** Docker may have changed the container's state: ask it before deciding the log is done. */
  private stateChanged = true;
  private wakeUp: (() => void) | undefined;

  constructor(private readonly deps: JsonLogTailDeps) {
    this.base = path.basename(deps.jsonLogPath);
  }

  /** Makes the tail look again (someone waits for the log to be complete: a missed event must not stall it). */
  nudge(): void {
    this.stateChanged = true;
    this.wake();
  }

  /** Resolves when the container exited and its log is read to the end, or on abort. */
  async run(): Promise<'exited' | 'stopped'> {
    const { jsonLogPath, signal } = this.deps;
    const watcher = fs.watch(path.dirname(jsonLogPath), { persistent: false }, (_event, name) => {
      if (name !== this.base) this.stateChanged = true;
      this.wake();
    });
    // The directory went away (the container was removed) or the watch broke: look, then wait on.
    watcher.on('error', () => this.nudge());
    const onAbort = (): void => this.wake();
    signal.addEventListener('abort', onAbort);
    const open: OpenLog[] = [];
    try {
      const { files, offset, exact } = await this.openForResume();
      open.push(...files);
      this.deps.starting(exact);
      this.decoder.reset(offset);
      // Rotated files the saved position was in: to their end, then the next.
      while (open.length > 1) {
        await this.readToEnd(open[0]!);
        await this.finishFile(open.shift()!);
      }
      let exited = false;
      for (;;) {
        if (signal.aborted) return 'stopped';
        this.woken = false;
        if (this.stateChanged) {
          this.stateChanged = false;
          // Asked before the last read: once it says exited, json-file has written everything.
          const inspect = await this.deps.dockerCached.inspectContainer(this.deps.containerId, { signal });
          exited = !inspect.State.Running;
        }
        const live = open[0];
        if (live) await this.readToEnd(live);
        const atPath = await identityAt(jsonLogPath);
        const reading = live ? await live.handle.stat({ bigint: true }) : undefined;
        const action = live && reading
          ? afterEndOfFile({ reading: { device: reading.dev, inode: reading.ino, size: reading.size }, atPath, position: this.decoder.readPosition, exited })
          : atPath ? 'switch' : exited ? 'done' : 'wait';
        if (action === 'done') return 'exited';
        if (action === 'wait') {
          await this.nextWake();
        } else if (action === 'restart') {
          this.deps.log.warn({ containerId: this.deps.containerId, file: jsonLogPath, at: this.decoder.readPosition }, 'the json-file log was truncated; reading it again from its start');
          this.decoder.reset(0);
        } else {
          // Rotated: the renamed file is finished through its descriptor (json-file no longer
          // writes it), then the new one is read from its start.
          if (live) {
            await this.readToEnd(live);
            await this.finishFile(open.shift()!);
          }
          const next = await openLog(jsonLogPath);
          if (next) {
            open.push(next);
            this.decoder.reset(0);
          } else {
            // Gone again, or not a regular file: the next change in the directory tells.
            this.stateChanged = true;
            await this.nextWake();
          }
        }
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      watcher.close();
      await Promise.all(open.map((f) => f.handle.close().catch(() => undefined)));
    }
  }

  private wake(): void {
    this.woken = true;
    const wakeUp = this.wakeUp;
    this.wakeUp = undefined;
    wakeUp?.();
  }

  private nextWake(): Promise<void> {
    if (this.woken || this.deps.signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => (this.wakeUp = resolve));
  }

  /** The files to read, oldest first (the last one live), and where in the first to start. */
  private async openForResume(): Promise<{ files: OpenLog[]; offset: number; exact: boolean }> {
    const { jsonLogPath, saved } = this.deps;
    const found: Array<LogGeneration & { file: OpenLog }> = [];
    // Newest first: a rotation meanwhile shows a file twice (kept once), never hides one
    // that is older than the saved position's.
    for (let index = 0; index <= MAX_ROTATED; index++) {
      const file = await openLog(index === 0 ? jsonLogPath : `${jsonLogPath}.${index}`);
      if (!file) {
        if (index === 0) continue;
        break;
      }
      const size = (await file.handle.stat({ bigint: true })).size;
      if (found.some((g) => g.device === file.id.device && g.inode === file.id.inode)) {
        await file.handle.close();
        continue;
      }
      found.push({ index, ...file.id, size, file });
      if (saved && file.id.device.toString() === saved.device && file.id.inode.toString() === saved.inode) break;
    }
    const savedId = saved ? { device: BigInt(saved.device), inode: BigInt(saved.inode), offset: saved.offset } : undefined;
    const plan = planResumeRead(found, savedId);
    const files = plan.order.map((index) => found.find((g) => g.index === index)!.file);
    await Promise.all(found.filter((g) => !files.includes(g.file)).map((g) => g.file.handle.close()));
    if (saved && !plan.exact) {
      this.deps.log.warn({ containerId: this.deps.containerId, files: files.length }, 'the json-file log position saved is gone; resuming by the CRI log\'s last timestamp');
    }
    return { files, offset: plan.offset, exact: plan.exact };
  }

  /** Reads the file from where the decoder stands to its current end, writing as it goes. */
  private async readToEnd(file: OpenLog): Promise<void> {
    const { signal } = this.deps;
    for (;;) {
      if (signal.aborted) return;
      const position = this.decoder.readPosition;
      const { size } = await file.handle.stat();
      if (size <= position) return;
      const buf = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, size - position));
      const { bytesRead } = await file.handle.read(buf, 0, buf.length, position);
      if (bytesRead === 0) return;
      const problems: JsonLogProblem[] = [];
      const lines = this.decoder.push(buf.subarray(0, bytesRead), problems);
      for (const p of problems) this.deps.log.warn({ containerId: this.deps.containerId, offset: p.offset, reason: p.reason }, 'skipped a json-file log line');
      if (lines.length > 0) await this.deps.write(lines.flatMap((l) => l.records), positionOf(file, lines.at(-1)!.end));
    }
  }

  private async finishFile(file: OpenLog): Promise<void> {
    if (this.decoder.torn) {
      this.deps.log.warn({ containerId: this.deps.containerId, at: this.decoder.offset }, 'a rotated json-file log ended inside a line; dropped its start');
    }
    await file.handle.close().catch((err: unknown) => {
      this.deps.log.debug({ containerId: this.deps.containerId, error: errorMessage(err) }, 'closing a json-file log failed');
    });
  }
}
