// Waiting for room in a writable stream that said it is full: the one way both the gRPC
// streams and the streaming server do it, so a writer resumes on 'drain' and never waits on
// a stream that closed, failed or whose caller left meanwhile.
import type { EventEmitter } from 'node:events';

/** Calls `then` once, at the stream's next 'drain', 'close' or 'error', or when `signal` aborts. */
export function whenRoomIn(stream: EventEmitter, then: () => void, signal?: AbortSignal): void {
  const go = (): void => {
    stream.off('drain', go);
    stream.off('close', go);
    stream.off('error', go);
    signal?.removeEventListener('abort', go);
    then();
  };
  stream.on('drain', go);
  stream.on('close', go);
  stream.on('error', go);
  signal?.addEventListener('abort', go, { once: true });
}
