// Copies one container's output from Docker's log API into its CRI log file, for as long as
// the container runs. It reads with timestamps, so every record keeps Docker's time and a
// restarted shim can skip exactly what the file already holds; it reads with backpressure
// (the next chunk only after the last write finished), so memory per follower stays at one
// stream chunk plus one record piece.
import * as fs from 'node:fs';
import type { DockerClient } from '../docker/client';
import { DockerNotFoundError, errorMessage, FailedPreconditionError } from '../errors';
import type { Logger } from '../util/logger';
import {
  encodeCriLine,
  MultiplexedLogDecoder,
  RawLogDecoder,
  ResumeFilter,
  resumePointFromTail,
  sinceSeconds,
  type LogDecoder,
  type LogRecord,
  type ResumePoint,
} from './cri-format';
import { openContainerLog, openWrittenContainerLog } from './log-file';
import type { FollowerRecord, FollowerRecordStore } from './follower-records';

/** How much of the file's end is read to find where writing stopped. */
const TAIL_BYTES = 1024 * 1024;
const MAX_RETRY_DELAY_MS = 5_000;

/** Told what the followers write and when a log is rotated (for metrics). */
export interface LogRecorder {
  written(bytes: number, lines: number): void;
  rotated(): void;
}

export const NO_LOG_RECORDER: LogRecorder = { written: () => undefined, rotated: () => undefined };

export interface FollowerDeps {
  docker: DockerClient;
  store: FollowerRecordStore;
  log: Logger;
  recorder: LogRecorder;
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
    this.done = this.run().catch((err: unknown) => {
      deps.log.error({ containerId, error: errorMessage(err) }, 'container log follower failed');
    });
  }

  get active(): boolean {
    return !this.finished;
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
      this.deps.store.save(this.containerId, { ...this.state, resume: this.filter.current(), complete: false });
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

  private write(records: LogRecord[]): Promise<void> {
    const lines = records.filter((r) => this.filter.accept(r)).map(encodeCriLine);
    if (lines.length === 0) return Promise.resolve();
    const data = Buffer.concat(lines);
    return this.enqueue(async () => {
      this.file ??= await openContainerLog(this.state.logPath);
      await this.file.write(data);
      this.deps.recorder.written(data.length, lines.length);
    });
  }

  /** Copies Docker's log from the current point: to its end, or (following) until the stream ends. */
  private async copy(follow: boolean): Promise<void> {
    this.filter.seek();
    const stream = await this.deps.docker.containerLogs(this.containerId, {
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

  private async run(): Promise<void> {
    const { docker, log, store } = this.deps;
    const signal = this.abort.signal;
    this.filter = new ResumeFilter((await resumePointOfFile(this.state.logPath)) ?? this.state.resume);
    let failures = 0;
    let complete = false;
    try {
      while (!signal.aborted) {
        try {
          await this.copy(true);
          failures = 0;
          // Docker ends a follow stream when the container stops (or when it restarts itself).
          const inspect = await docker.inspectContainer(this.containerId, { signal });
          if (!inspect.State.Running) {
            // A follow stream can end before the last messages reach it; one plain read from
            // where we are picks them up (the filter skips what is already written).
            await this.copy(false);
            complete = true;
            break;
          }
        } catch (err) {
          if (signal.aborted) break;
          if (err instanceof DockerNotFoundError) {
            this.gone = true;
            break;
          }
          failures++;
          const delay = Math.min(MAX_RETRY_DELAY_MS, 100 * 2 ** failures);
          log.warn({ containerId: this.containerId, error: errorMessage(err), retryInMs: delay }, 'container log stream failed; resuming');
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, delay);
            signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
          });
        }
      }
    } finally {
      await this.enqueue(async () => {
        this.finished = true;
        await this.file?.close();
        this.file = undefined;
      });
      if (this.gone) store.remove(this.containerId);
      else if (complete) store.save(this.containerId, { ...this.state, resume: this.filter.current(), complete: true });
    }
  }
}
