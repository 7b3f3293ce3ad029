// When the storage passes run: one at start, then every refreshMs, and soon after someone asks
// about what a pass did not see yet. Never two at once: asked during a pass, one more runs right
// after it.
import { errorMessage } from '../errors';
import type { Logger } from '../util/logger';

export class PassSchedule {
  private readonly stopped = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private passing: Promise<void> | undefined;
  private passAgain = false;

  constructor(
    private readonly pass: (signal: AbortSignal) => Promise<void>,
    private readonly refreshMs: number,
    private readonly log: Logger,
  ) {}

  /** Aborted once closed: the passes and any walk under way stop. */
  get signal(): AbortSignal {
    return this.stopped.signal;
  }

  /** The pass under way, if any. */
  get running(): Promise<void> | undefined {
    return this.passing;
  }

  /** One pass now, then every refreshMs. */
  start(): void {
    this.timer = setInterval(() => this.request(), this.refreshMs);
    this.timer.unref();
    this.request();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.stopped.abort(new Error('the shim is stopping'));
  }

  /** Runs a pass now, or right after the one under way; nothing before start or after close. */
  request(): void {
    if (this.stopped.signal.aborted || this.timer === undefined) return;
    if (this.passing) {
      this.passAgain = true;
      return;
    }
    this.passing = this.pass(this.stopped.signal)
      .catch((err: unknown) => {
        if (!this.stopped.signal.aborted) this.log.warn({ err: errorMessage(err) }, 'storage figures: a pass failed; the next one tries again');
      })
      .finally(() => {
        this.passing = undefined;
        if (this.passAgain) {
          this.passAgain = false;
          this.request();
        }
      });
  }
}
