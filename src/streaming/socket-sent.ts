// When a connection's socket has handed everything written to it so far to the kernel: a
// zero-length write after it completes only then (a socket's writes complete in order), and
// within a corked turn it joins the same writev at no cost. The channels use it to say when a
// lent read of Docker's may be read into again (docker-output.ts's SentBarrier), the SPDY session
// when one of its client's may (spdy/session.ts, a stream's pipe target).
import type { Writable } from 'node:stream';

const NO_BYTES = Buffer.alloc(0);

/** `then(true)` once `socket`'s writes so far have completed; false if it failed or cannot write. */
export function afterSocketSent(socket: Writable, then: (sent: boolean) => void): void {
  if (!socket.writable) return then(false);
  socket.write(NO_BYTES, (err) => then(!err));
}
