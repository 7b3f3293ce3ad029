// What exec and attach need from a client connection, whichever transport carries it
// (SPDY streams or WebSocket channels): the standard streams, terminal resizes, and a way to
// report how the command ended and hang up.
import type { Readable, Writable } from 'node:stream';
import { ResizeReader, type Outcome, type TerminalSize } from './protocol';

/** Where a TTY session's terminal sizes go. */
export interface ResizeListener {
  /** The client's latest terminal size. */
  size(size: TerminalSize): void;
  /** A message over the bound closed the resize channel: no size comes after this. */
  overflow(): void;
}

export interface StdioChannels {
  /** The negotiated sub-protocol (e.g. v4.channel.k8s.io). */
  readonly protocol: string;
  readonly stdin: Readable | undefined;
  readonly stdout: Writable | undefined;
  readonly stderr: Writable | undefined;
  /**
   * Hands the client's terminal sizes to `listener` (a TTY session), starting with the latest
   * one it sent before, if any. Without a listener (no TTY) the resize channel is closed: what
   * the client sends there is dropped unread.
   */
  takeResizes(listener?: ResizeListener): void;
  /** Resolves when the client hangs up. */
  readonly clientGone: Promise<void>;
  /** Ends the output streams, writes the outcome on the error stream and closes the connection. */
  finish(outcome: Outcome): Promise<void>;
}

/** Waits for a writable to flush what was written and end (or be gone already). */
export function endWritable(w: Writable | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!w || w.writableFinished || w.destroyed) return resolve();
    w.once('error', () => resolve());
    w.end(() => resolve());
  });
}

/**
 * A resize channel's bytes, read as sizes for its listener. Before the listener comes, only the
 * latest size is kept; once closed (no TTY, or a message over the bound) nothing more is read.
 */
export class ResizeFeed {
  private readonly reader = new ResizeReader();
  private listener: ResizeListener | undefined;
  private early: TerminalSize | undefined;
  private shut: boolean;

  constructor(open: boolean) {
    this.shut = !open;
  }

  get open(): boolean {
    return !this.shut;
  }

  /** Reads one chunk of the channel; answers whether it is still open. */
  push(chunk: Buffer): boolean {
    if (this.shut) return false;
    const size = this.reader.push(chunk);
    if (size && this.listener) this.listener.size(size);
    else if (size) this.early = size;
    if (this.reader.closed) {
      this.shut = true;
      this.listener?.overflow();
    }
    return !this.shut;
  }

  take(listener: ResizeListener | undefined): void {
    if (!listener) {
      this.shut = true;
      this.early = undefined;
      return;
    }
    this.listener = listener;
    if (this.early) listener.size(this.early);
    this.early = undefined;
    if (this.reader.closed) listener.overflow();
  }
}
