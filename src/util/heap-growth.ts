// V8's old-generation growth while a byte stream is open. Every read of a streaming client's
// connection is a fresh 64 KiB ArrayBuffer (Node 20 reads a server's sockets into no buffer of
// ours), and V8 counts the external memory added since the last mark-compact against an old
// generation limit a few MiB above the live heap: at V8's own growth, exec stdin set off a
// mark-compact every 8-16 MiB (~45 per GiB, 40 % of the shim's CPU), long before the young
// collection would have freed the buffers. Allowed 4x what the last one kept, the young
// collection comes first (~2 per GiB). Only while a stream is open: between fewer collections
// more backing stores pile up in malloc's heap, which after a burst of calls stayed ~3 MiB
// higher with the growth set for good (bench/README.md). Set at run time (v8.setFlagsFromString),
// after start-up took Node's and the bundle's code caches (see ../main.ts).
import * as v8 from 'node:v8';

/** While a stream is open, V8 lets the old generation grow to (1 + this / 100) x what a mark-compact kept. */
export const STREAMING_HEAP_GROWING_PERCENT = 300;

export class StreamHeapGrowth {
  private open = 0;

  constructor(private readonly setFlags: (flags: string) => void = (flags) => v8.setFlagsFromString(flags)) {}

  /** A byte stream (exec, attach, port forward) opened. */
  opened(): void {
    if (this.open++ === 0) this.setFlags(`--heap-growing-percent=${STREAMING_HEAP_GROWING_PERCENT}`);
  }

  /** One closed; the last gives V8 back its own growth (0: V8 computes the factor). */
  closed(): void {
    if (this.open === 0) return;
    if (--this.open === 0) this.setFlags('--heap-growing-percent=0');
  }
}
