// What exec and attach need from a client connection, whichever transport carries it
// (SPDY streams or WebSocket channels): the standard streams, terminal resizes, and a way to
// report how the command ended and hang up.
import type { Readable, Writable } from 'node:stream';
import type { Outcome, TerminalSize } from './protocol';

export interface StdioChannels {
  /** The negotiated sub-protocol (e.g. v4.channel.k8s.io). */
  readonly protocol: string;
  readonly stdin: Readable | undefined;
  readonly stdout: Writable | undefined;
  readonly stderr: Writable | undefined;
  /** Calls back for each resize the client sends (TTY sessions only). */
  onResize(listener: (size: TerminalSize) => void): void;
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
