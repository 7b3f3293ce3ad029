// Copies one container's output into its CRI log file, for as long as the container runs.
// A json-file container's log is read from Docker's file on disk (json-file-tail.ts): dockerd
// then holds nothing for it. Any other log driver's goes through Docker's log API with
// timestamps, one stream per container. Either way every record keeps Docker's time, so a
// restarted shim can skip exactly what the file already holds (json-file: from the file offset
// saved with that point); and reading has backpressure (the next chunk only after the last
// write finished), so memory per follower stays at one chunk plus one record piece.
import * as fs from 'node:fs';
import type { Slots } from '../util/slots';
import type { DockerClient } from '../docker/client';
import type { ContainerInspect } from '../docker/types';
import { DockerNotFoundError, errorMessage, FailedPreconditionError } from '../errors';
import { containerLogPath, logPathNeedsImage } from '../conventions/labels';
import type { Logger } from '../util/logger';
import {
  encodeCriLine,
  MultiplexedLogDecoder,
  RawLogDecoder,
  ResumeFilter,
  resumePointFromTail,
  samePoint,
  sinceSeconds,
  type LogDecoder,
  type LogRecord,
  type ResumePoint,
} from './cri-format';
import { openContainerLog, openWrittenContainerLog } from './log-file';
import type { FollowerRecord, FollowerRecordStore, JsonLogPosition } from './follower-records';
import { expectedJsonLogPath } from './json-file';
import { JsonLogTail } from './json-file-tail';

/** How much of the file's end is read to find where writing stopped. */
const TAIL_BYTES = 1024 * 1024;
const MAX_RETRY_DELAY_MS = 5_000;
/**
 * How often, at most, a json-file follower saves its position while writing. A shim killed
 * between saves reads again from the last one, and the CRI log's tail tells which of those
 * records are already written; a save per write would be a file replaced per line.
 */
const SAVE_INTERVAL_MS = 2_000;

/** Told what the followers write and when a log is rotated (for metrics). */
export interface LogRecorder {
  written(bytes: number, lines: number): void;
  rotated(): void;
}

export const NO_LOG_RECORDER: LogRecorder = { written: () => undefined, rotated: () => undefined };

interface FollowerDeps {
  /** Docker itself: its log API, and whether a container runs the moment its log stream ended (the cache may not have heard yet). */
  dockerDirect: DockerClient;
  /**
   * Where the container's inspect is read otherwise (its log source and path, whether it still
   * runs while its json-file log is read): the state cache's documents, which cost no request.
   */
  dockerCached: Pick<DockerClient, 'inspectContainer' | 'inspectImage'>;
  store: FollowerRecordStore;
  log: Logger;
  recorder: LogRecorder;
  /** Docker's root directory (its info's DockerRootDir); "" leaves every container to the log API. */
  dockerRootDir: string;
  /** Held from the start until the follower knows its source (its first inspect): resumed followers share a few. */
  startSlots?: Slots;
}

/** Where a container's output is read from. */
type LogSource = { kind: 'json-file'; jsonLogPath: string } | { kind: 'docker-api' } | { kind: 'none' };

/**
 * The source for a container, from Docker's inspect: its json-file log when its LogPath is
 * exactly where Docker keeps that container's, else Docker's log API; nothing for the "none"
 * driver, which keeps no output. `refused` is set when a json-file container's LogPath is not
 * that path (then the API is used).
 */
export function logSourceOf(inspect: ContainerInspect, dockerRootDir: string): LogSource & { refused?: string } {
  const driver = inspect.HostConfig?.LogConfig?.Type;
  if (driver === 'none') return { kind: 'none' };
  if (driver !== 'json-file') return { kind: 'docker-api' };
  const expected = dockerRootDir === '' ? undefined : expectedJsonLogPath(dockerRootDir, inspect.Id);
  if (expected && inspect.LogPath === expected) return { kind: 'json-file', jsonLogPath: expected };
  return { kind: 'docker-api', refused: inspect.LogPath ?? '' };
}

/**
 * Where the file at `logPath` ends, as a resume point; undefined for a missing or empty file.
 * A line torn by a crash mid-write is cut off first, so that what follows starts a line.
 * An empty file says nothing about where writing stood: it is a file just created (by
 * StartContainer, before any output, or by a reopen), so the caller falls back to the point
 * saved when that file was opened.
 */
export async function resumePointOfFile(logPath: string): Promise<ResumePoint | undefined> {
  const handle = await openWrittenContainerLog(logPath);
  if (!handle) return undefined;
  try {
    const { size } = await handle.stat();
    const start = Math.max(0, size - TAIL_BYTES);
    const buf = Buffer.alloc(size - start);
    await handle.read(buf, 0, buf.length, start);
    if (buf.length > 0 && buf[buf.length - 1] !== 0x0a) {
      const lastNewline = buf.lastIndexOf(0x0a);
      await handle.truncate(lastNewline >= 0 ? start + lastNewline + 1 : start);
    }
    return resumePointFromTail(buf.toString('utf8'), start === 0);
  } finally {
    await handle.close();
  }
}

export class LogFollower {
  private readonly abort = new AbortController();
  private file: fs.promises.FileHandle | undefined;
  private filter = new ResumeFilter(undefined);
  /** Writes and reopens run one after another, in order. */
  private queue: Promise<void> = Promise.resolve();
  private finished = false;
  /** Where the CRI log's writing stands after the last finished write (and the json-file position it came from). */
  private committed: { resume: ResumePoint | undefined; jsonLog: JsonLogPosition | undefined };
  private saveTimer: NodeJS.Timeout | undefined;
  private tail: JsonLogTail | undefined;
  /** The source in use, once known (for metrics and tests: which way the output comes). */
  source: LogSource['kind'] | undefined;
  /** Set when the container turned out to be removed (by RemovePodSandbox, or behind our back). */
  gone = false;
  readonly done: Promise<void>;

  /**
   * `file` is the log file StartContainer opened before starting the container; without it
   * (a follower resumed after a shim restart) the file is opened with the first write.
   */
  constructor(
    private readonly deps: FollowerDeps,
    readonly containerId: string,
    private readonly state: FollowerRecord,
    file?: fs.promises.FileHandle,
  ) {
    this.file = file;
    this.committed = { resume: state.resume, jsonLog: state.jsonLog };
    this.done = this.run().catch((err: unknown) => {
      deps.log.error({ containerId, error: errorMessage(err) }, 'container log follower failed');
    });
  }

  get active(): boolean {
    return !this.finished;
  }

  /** Someone waits for the log to be complete (the container stopped): look now rather than at the next event. */
  nudge(): void {
    this.tail?.nudge();
  }

  /**
   * Starts a fresh file at the log path (after kubelet renamed the old one away). The new file
   * exists when this resolves, even if nothing is written to it yet. If it cannot be opened,
   * writing goes on into the old file, which kubelet renames back when the reopen fails.
   */
  reopen(): Promise<void> {
    return this.enqueue(async () => {
      if (this.finished) throw new FailedPreconditionError(`container ${this.containerId}: its log follower has finished`);
      // Saved first: if the shim dies before the new file holds a line, the restarted one
      // finds it missing or empty and continues from here.
      this.save(false);
      const next = await openContainerLog(this.state.logPath);
      const old = this.file;
      this.file = next;
      this.deps.recorder.rotated();
      // The new file is in place; a failure to close the renamed one loses nothing.
      await old?.close().catch((err: unknown) => {
        this.deps.log.warn({ containerId: this.containerId, error: errorMessage(err) }, 'closing the rotated container log failed');
      });
    });
  }

  /** Stops following (the container is being removed, or the shim stops). */
  async stop(): Promise<void> {
    this.abort.abort(new Error('log follower stopped'));
    await this.done;
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    const next = this.queue.then(step);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Appends the records not written before; `jsonLog` is where Docker's file stands after them. */
  private write(records: LogRecord[], jsonLog?: JsonLogPosition): Promise<void> {
    const lines = records.filter((r) => this.filter.accept(r)).map(encodeCriLine);
    const resume = this.filter.current();
    const seeking = this.filter.seeking;
    if (lines.length === 0 && !jsonLog) return Promise.resolve();
    const data = Buffer.concat(lines);
    return this.enqueue(async () => {
      if (lines.length > 0) {
        this.file ??= await openContainerLog(this.state.logPath);
        await this.file.write(data);
        this.deps.recorder.written(data.length, lines.length);
      }
      // A json-file offset pairs with the point only once the filter has found its point:
      // while it still skips, the offset is short of the point, and none is kept.
      this.committed = { resume, jsonLog: jsonLog && !seeking ? jsonLog : undefined };
      if (this.committed.jsonLog) this.scheduleSave();
    });
  }

  private save(complete: boolean): void {
    const { resume, jsonLog } = this.committed;
    const checked = this.state.checked === true ? { checked: true } : {};
    this.deps.store.save(this.containerId, { logPath: this.state.logPath, tty: this.state.tty, resume, ...(jsonLog ? { jsonLog } : {}), complete, ...checked });
  }

  private scheduleSave(): void {
    if (this.saveTimer) return;
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined;
      if (this.finished || !this.committed.jsonLog) return;
      try {
        this.save(false);
      } catch (err) {
        this.deps.log.warn({ containerId: this.containerId, error: errorMessage(err) }, 'saving the log follower\'s position failed');
      }
    }, SAVE_INTERVAL_MS);
    this.saveTimer.unref();
  }

  /** Copies Docker's log API output from the current point: to its end, or (following) until the stream ends. */
  private async copy(follow: boolean): Promise<void> {
    this.filter.seek();
    const stream = await this.deps.dockerDirect.containerLogs(this.containerId, {
      follow,
      stdout: true,
      stderr: true,
      timestamps: true,
      since: sinceSeconds(this.filter.current()),
      signal: this.abort.signal,
    });
    const decoder: LogDecoder = this.state.tty ? new RawLogDecoder() : new MultiplexedLogDecoder();
    try {
      for await (const chunk of stream) await this.write(decoder.push(chunk as Buffer));
    } finally {
      stream.destroy();
    }
    await this.write(decoder.end());
  }

  /** Follows through Docker's log API until the container has stopped and all its output is written. */
  private async followApi(): Promise<void> {
    for (;;) {
      await this.copy(true);
      // Docker ends a follow stream when the container stops (or when it restarts itself).
      const inspect = await this.deps.dockerDirect.inspectContainer(this.containerId, { signal: this.abort.signal });
      if (!inspect.State.Running) {
        // A follow stream can end before the last messages reach it; one plain read from
        // where we are picks them up (the filter skips what is already written).
        await this.copy(false);
        return;
      }
    }
  }

  /**
   * Follows Docker's json-file log until the container has stopped and all of it is written.
   * `filePoint` is what the CRI file's tail showed at the start; on a retry in this process,
   * what was last written is known exactly.
   */
  private async followJsonFile(jsonLogPath: string, filePoint: ResumePoint | undefined): Promise<'exited' | 'stopped'> {
    const saved = this.committed;
    this.tail = new JsonLogTail({
      containerId: this.containerId,
      jsonLogPath,
      dockerCached: this.deps.dockerCached,
      log: this.deps.log,
      signal: this.abort.signal,
      saved: saved.jsonLog,
      starting: (exact) => {
        // Continuing at the saved offset: if the CRI file ends where the save says, every
        // record from there on is new; if it holds more (written after the save), those are
        // skipped by looking for its last record. Not at the offset: by the file's tail alone.
        const point = filePoint ?? saved.resume;
        if (exact && samePoint(point, saved.resume)) {
          this.filter = new ResumeFilter(saved.resume, { seek: false });
        } else {
          this.filter = new ResumeFilter(point);
          // Until the point is found again, no offset goes with it (the saved record keeps its pair).
          this.committed = { resume: point, jsonLog: undefined };
        }
      },
      write: (records, position) => this.write(records, position),
    });
    try {
      return await this.tail.run();
    } finally {
      this.tail = undefined;
    }
  }

  /**
   * For a record an older shim wrote: whether its path is the container's own log path or its
   * image's label (an older shim took an image's label for its own when a container had none);
   * the inspect, when it is the container's own.
   */
  private async checkLogPath(signal: AbortSignal): Promise<ContainerInspect | 'not-own' | 'gone'> {
    const { dockerCached, log } = this.deps;
    let inspect: ContainerInspect;
    let imageLabels: Readonly<Record<string, string>> | undefined;
    try {
      inspect = await dockerCached.inspectContainer(this.containerId, { signal });
    } catch (err) {
      if (err instanceof DockerNotFoundError) return 'gone';
      throw err;
    }
    if (logPathNeedsImage(inspect.Config.Labels, inspect.Name)) {
      // An image gone (only a forced removal takes one a container uses) leaves the label standing.
      imageLabels = await dockerCached.inspectImage(inspect.Image, { signal }).then(
        (image) => image.Config?.Labels ?? {},
        (err: unknown) => {
          if (err instanceof DockerNotFoundError) return undefined;
          throw err;
        },
      );
    }
    if (containerLogPath(inspect.Config.Labels, inspect.Name, imageLabels) !== this.state.logPath) {
      log.warn({ containerId: this.containerId, logPath: this.state.logPath }, "the saved log path is the container's image's label, not the shim's: its output is not copied there");
      return 'not-own';
    }
    this.state.checked = true;
    return inspect;
  }

  private async run(): Promise<void> {
    const { dockerCached, log, store } = this.deps;
    const signal = this.abort.signal;
    const releaseSlot = (await this.deps.startSlots?.acquire()) ?? (() => undefined);
    let filePoint: ResumePoint | undefined;
    let failures = 0;
    let complete = false;
    try {
      // Before anything touches the file (the resume point cuts a torn last line off it).
      let checked = this.state.checked === true ? undefined : await this.checkLogPath(signal);
      if (checked === 'gone') this.gone = true;
      if (checked === 'not-own') complete = true;
      if (checked === 'gone' || checked === 'not-own') return;
      filePoint = await resumePointOfFile(this.state.logPath);
      while (!signal.aborted) {
        try {
          // The check's inspect is this pass's.
          const inspect = typeof checked === 'object' ? checked : await dockerCached.inspectContainer(this.containerId, { signal });
          checked = undefined;
          releaseSlot();
          const source = logSourceOf(inspect, this.deps.dockerRootDir);
          const first = this.source === undefined;
          if (this.source !== source.kind) {
            if (source.refused !== undefined) {
              log.warn({ containerId: this.containerId, logPath: source.refused }, 'the container\'s json-file LogPath is not where Docker keeps it; following through Docker\'s log API');
            }
            log.debug({ containerId: this.containerId, source: source.kind }, 'following the container log');
            this.source = source.kind;
          }
          if (source.kind === 'json-file') {
            if ((await this.followJsonFile(source.jsonLogPath, filePoint)) === 'stopped') break;
          } else if (source.kind === 'docker-api') {
            if (first) {
              // One filter for every stream of this run: each replay seeks its current point.
              this.filter = new ResumeFilter(filePoint ?? this.state.resume);
              this.committed = { resume: this.filter.current(), jsonLog: undefined };
            }
            await this.followApi();
          }
          complete = true;
          break;
        } catch (err) {
          if (signal.aborted) break;
          if (err instanceof DockerNotFoundError) {
            this.gone = true;
            break;
          }
          // Retried from what was written last, not from the file's tail at the start.
          filePoint = undefined;
          failures++;
          const delay = Math.min(MAX_RETRY_DELAY_MS, 100 * 2 ** failures);
          log.warn({ containerId: this.containerId, error: errorMessage(err), retryInMs: delay }, 'reading the container log failed; resuming');
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, delay);
            signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
          });
        }
      }
    } finally {
      releaseSlot();
      await this.enqueue(async () => {
        this.finished = true;
        clearTimeout(this.saveTimer);
        this.saveTimer = undefined;
        await this.file?.close();
        this.file = undefined;
      });
      if (this.gone) await store.remove(this.containerId);
      else if (complete) this.save(true);
      // Stopped (shim shutdown): the exact position, so the next run reads nothing twice.
      else if (this.committed.jsonLog) this.save(false);
    }
  }
}
