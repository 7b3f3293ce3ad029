// Writes in batches: what one turn of the event loop writes to a connection leaves in one
// system call (a writev), corked until the turn ends (TurnCork). A write each cost the shim most
// of its CPU on stdin (writeBuffer was 37 % of a profile) and woke the reader once a frame.
//
// pipeInBatches: the client's input (stdin, a port-forward connection's data) into Docker's
// connection or the pod's, as stream.pipe would copy it, but the frames of one read of the
// client's connection (two or more of kubectl's 32 KiB stdin frames) go in one write. pipe()
// cannot batch them: it stops at the target's 16 KiB high-water mark, after one frame.
//
// Backpressure as pipe's, at a bound of our own: the source is not read while the target holds
// PIPE_BUFFER_BYTES or more unwritten, so what a session holds here is at most that plus one chunk.
import type { Readable, Writable } from 'node:stream';
import { PIPE_BUFFER_BYTES } from './limits';
import { whenRoomIn } from '../util/stream-room';

/** A readable whose chunks are views of lent reads, told where its reader writes them. */
interface LentSource {
  pipedTo: Writable | undefined;
}

function isLentSource(source: Readable): source is Readable & LentSource {
  return 'pipedTo' in source;
}

/** Corks a writable at most once a turn of the event loop, and uncorks it as the turn ends. */
export class TurnCork {
  private corked = false;
  private readonly uncork = (): void => {
    this.corked = false;
    this.target.uncork();
  };

  constructor(private readonly target: Writable) {}

  /** What is written to the target from now until the end of this turn goes out in one write. */
  cork(): void {
    if (this.corked) return;
    this.corked = true;
    this.target.cork();
    process.nextTick(this.uncork);
  }
}

/**
 * Copies `source` into `target` until `source` ends (then ends `target`) or `target` closes
 * (then `source` is no longer read). Errors are left to their owners' handlers, as pipe does.
 */
export function pipeInBatches(source: Readable, target: Writable): void {
  // A source whose chunks are lent reads (a SPDY stream) gives them back once `target` sent them.
  if (isLentSource(source)) source.pipedTo = target;
  const batch = new TurnCork(target);
  let waiting = false;
  const resume = (): void => {
    waiting = false;
    if (!target.destroyed) source.resume();
  };
  const onData = (chunk: Buffer): void => {
    if (target.destroyed || target.writableEnded) return;
    batch.cork();
    target.write(chunk);
    // (At or past the target's own high-water mark, so that its 'drain' comes.)
    if (target.writableLength >= Math.max(PIPE_BUFFER_BYTES, target.writableHighWaterMark) && !waiting) {
      waiting = true;
      source.pause();
      whenRoomIn(target, resume);
    }
  };
  const onEnd = (): void => {
    if (!target.destroyed && !target.writableEnded) target.end();
  };
  source.on('data', onData);
  source.once('end', onEnd);
  target.once('close', () => {
    source.off('data', onData);
    source.off('end', onEnd);
    source.pause();
  });
}
