// When the storage passes run: one at start, then when someone asks for a figure that is due
// (../storage/docker-storage.ts: the state moved, or the figures are old), never on a timer, so an
// idle shim runs none. Never two at once: asked during a pass, one more runs right after it.
import { errorMessage } from '../errors';
import type { Logger } from '../util/logger';

export class PassSchedule {
  private readonly stopped = new AbortController();
  private started = false;
  private passing: Promise<void> | undefined;
  private passAgain = false;

  constructor(
    private readonly pass: (signal: AbortSignal) => Promise<void>,
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

  /** One pass now; later ones when requested. */
  start(): void {
    this.started = true;
    this.request();
  }

  close(): void {
    this.stopped.abort(new Error('the shim is stopping'));
  }

  /** Runs a pass now, or right after the one under way; nothing before start or after close. */
  request(): void {
    if (this.stopped.signal.aborted || !this.started) return;
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
