// A fixed number of slots for work that must not all run at once (a restarted shim's hundreds
// of log followers each asking Docker first; connections to Docker): `acquire` waits for a free
// one, in order.
export class Slots {
  private free: number;
  /** Who waits, in order; a Set so that a waiter who gives up leaves it at once. */
  private readonly queue = new Set<() => void>();
  /** Who waits ahead of `queue` (see acquire's `ahead`), in order. */
  private readonly aheadQueue = new Set<() => void>();

  constructor(readonly count: number) {
    this.free = count;
  }

  /** Slots taken now. */
  get inUse(): number {
    return this.count - this.free;
  }

  /** Acquirers waiting for a slot. */
  get waiting(): number {
    return this.aheadQueue.size + this.queue.size;
  }

  /**
   * Resolves with the slot's release (idempotent) once a slot is free. Rejects with the
   * signal's reason if it aborts first; the waiter then holds nothing. `ahead`: waits ahead of
   * every waiter without it (a probe that must not queue behind a burst).
   */
  async acquire(signal?: AbortSignal, ahead = false): Promise<() => void> {
    if (signal?.aborted) throw signal.reason;
    if (this.free > 0) this.free--;
    else await this.wait(signal, ahead ? this.aheadQueue : this.queue);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const from = this.aheadQueue.size > 0 ? this.aheadQueue : this.queue;
      const next = from.values().next();
      if (next.done) this.free++;
      else {
        from.delete(next.value);
        next.value();
      }
    };
  }

  private wait(signal: AbortSignal | undefined, queue: Set<() => void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        queue.delete(grant);
        reject(signal?.reason);
      };
      const grant = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      queue.add(grant);
    });
  }
}
