// The client's input (stdin, a port-forward connection's data) into Docker's connection or the
// pod's, as stream.pipe would copy it but with fewer system calls: the chunks one turn of the
// event loop delivers (the frames of one read of the client's connection, two or more of
// kubectl's 32 KiB stdin frames) leave in one write, corked until the turn ends (a writev).
// pipe() cannot batch them: it stops at the target's 16 KiB high-water mark, after one frame.
// A write each cost the shim most of its CPU on stdin (writeBuffer was 37 % of a profile), and
// woke dockerd once a frame.
//
// Backpressure as pipe's, at a bound of our own: the source is not read while the target holds
// PIPE_BUFFER_BYTES or more unwritten, so what a session holds here is at most that plus one chunk.
import type { Readable, Writable } from 'node:stream';
import { PIPE_BUFFER_BYTES } from './limits';
import { whenRoomIn } from '../util/stream-room';

/**
 * Copies `source` into `target` until `source` ends (then ends `target`) or `target` closes
 * (then `source` is no longer read). Errors are left to their owners' handlers, as pipe does.
 */
export function pipeInBatches(source: Readable, target: Writable, maxUnwritten = PIPE_BUFFER_BYTES): void {
  let corked = false;
  let waiting = false;
  const uncork = (): void => {
    corked = false;
    target.uncork();
  };
  const resume = (): void => {
    waiting = false;
    if (!target.destroyed) source.resume();
  };
  const onData = (chunk: Buffer): void => {
    if (target.destroyed || target.writableEnded) return;
    if (!corked) {
      corked = true;
      target.cork();
      process.nextTick(uncork);
    }
    target.write(chunk);
    // (At or past the target's own high-water mark, so that its 'drain' comes.)
    if (target.writableLength >= Math.max(maxUnwritten, target.writableHighWaterMark) && !waiting) {
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
