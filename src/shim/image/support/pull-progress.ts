// Watching a pull: Docker sends a message per chunk; we keep a running summary, log it at a
// steady interval (never per chunk), and abort the pull when no message has arrived for the
// progress deadline.
import type { PullProgress } from '../../../docker/types';
import { DeadlineExceededError } from '../../../errors';
import type { Logger } from '../../../util/logger';

/** How often a long pull's progress is logged. */
const PROGRESS_LOG_INTERVAL_MS = 10_000;

export interface PullSummary {
  layers: number;
  layersDone: number;
  downloadedBytes: number;
  totalBytes: number;
  /**
   * Layers Docker finished without ever giving their size: the containerd store reports a blob
   * fetched between two of its progress ticks (100 ms) only as done ("hidecounts"), so a fast
   * pull there counts no bytes in the stream at all.
   */
  layersUncounted: number;
  lastStatus: string;
}

/** Folds progress messages into a per-pull summary (pure). */
export class PullProgressSummary {
  private readonly layers = new Map<string, { current: number; total: number; done: boolean; existed: boolean }>();
  private lastStatus = '';

  add(p: PullProgress): void {
    if (p.status) this.lastStatus = p.status;
    const id = p.id;
    if (!id || !p.status || p.status.startsWith('Pulling from')) return;
    const layer = this.layers.get(id) ?? { current: 0, total: 0, done: false, existed: false };
    if (p.status === 'Downloading' && p.progressDetail) {
      layer.current = p.progressDetail.current ?? layer.current;
      layer.total = p.progressDetail.total ?? layer.total;
    }
    if (p.status === 'Download complete') layer.current = layer.total;
    if (p.status === 'Pull complete' || p.status === 'Already exists') layer.done = true;
    if (p.status === 'Already exists') layer.existed = true;
    this.layers.set(id, layer);
  }

  summary(): PullSummary {
    let downloadedBytes = 0;
    let totalBytes = 0;
    let layersDone = 0;
    let layersUncounted = 0;
    for (const l of this.layers.values()) {
      downloadedBytes += l.current;
      totalBytes += l.total;
      if (l.done) layersDone++;
      if (l.done && !l.existed && l.total === 0) layersUncounted++;
    }
    return { layers: this.layers.size, layersDone, downloadedBytes, totalBytes, layersUncounted, lastStatus: this.lastStatus };
  }
}

/**
 * One pull's watchdog: `signal` aborts (with DeadlineExceededError naming the image) when no
 * progress arrives for `deadlineMs`. Call stop() when the pull ends, however it ends.
 */
export class PullWatch {
  private readonly controller = new AbortController();
  private readonly summary = new PullProgressSummary();
  private stallTimer: NodeJS.Timeout | undefined;
  private readonly logTimer: NodeJS.Timeout;

  constructor(
    private readonly image: string,
    private readonly deadlineMs: number,
    private readonly log: Logger,
    logEveryMs = PROGRESS_LOG_INTERVAL_MS,
  ) {
    this.armStallTimer();
    this.logTimer = setInterval(() => this.log.info({ image, ...this.summary.summary() }, 'pulling image'), logEveryMs);
    this.logTimer.unref();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  onProgress(p: PullProgress): void {
    this.summary.add(p);
    this.armStallTimer();
  }

  result(): PullSummary {
    return this.summary.summary();
  }

  stop(): void {
    clearTimeout(this.stallTimer);
    clearInterval(this.logTimer);
  }

  private armStallTimer(): void {
    clearTimeout(this.stallTimer);
    this.stallTimer = setTimeout(() => {
      const seconds = this.deadlineMs / 1000;
      this.controller.abort(
        new DeadlineExceededError(
          `pulling image ${JSON.stringify(this.image)}: no progress for ${seconds}s (--image-pull-progress-deadline); cancelled`,
        ),
      );
    }, this.deadlineMs);
    this.stallTimer.unref();
  }
}
