// Terminal resizes of one session on their way to Docker: whatever the client sends, Docker sees
// one resize call at a time, call starts at least MIN_RESIZE_INTERVAL_MS apart, and the latest
// size wins (sizes that come meanwhile replace each other; the last is sent when it may be).
import { errorMessage } from '../errors';
import type { Logger } from '../util/logger';
import type { ResizeListener } from './channels';
import type { TerminalSize } from './protocol';

/** Between the starts of two resize calls of one session: at most ten a second. */
export const MIN_RESIZE_INTERVAL_MS = 100;

export class ResizeCoalescer implements ResizeListener {
  private next: TerminalSize | undefined;
  /** The size Docker last took, not sent again. */
  private applied: TerminalSize | undefined;
  private inFlight = false;
  private lastStart = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private overflowLogged = false;

  constructor(
    private readonly resize: (size: TerminalSize) => Promise<void>,
    private readonly log: Logger,
    private readonly minIntervalMs = MIN_RESIZE_INTERVAL_MS,
  ) {}

  size(size: TerminalSize): void {
    if (this.stopped) return;
    this.next = size;
    this.pump();
  }

  overflow(): void {
    if (this.overflowLogged) return;
    this.overflowLogged = true;
    this.log.info('terminal resize channel closed: a message was over the bound; later resizes are dropped');
  }

  /** No call starts after this (the session is over). */
  stop(): void {
    this.stopped = true;
    this.next = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private pump(): void {
    if (this.stopped || this.inFlight || this.timer || !this.next) return;
    const wait = this.lastStart + this.minIntervalMs - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, wait);
      return;
    }
    const size = this.next;
    this.next = undefined;
    if (this.applied && this.applied.width === size.width && this.applied.height === size.height) return;
    this.inFlight = true;
    this.lastStart = Date.now();
    this.resize(size).then(
      () => {
        this.applied = size;
        this.settled();
      },
      (err: unknown) => {
        this.log.debug({ error: errorMessage(err) }, 'terminal resize failed');
        this.settled();
      },
    );
  }

  private settled(): void {
    this.inFlight = false;
    this.pump();
  }
}
