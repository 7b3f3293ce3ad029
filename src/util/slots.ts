// A fixed number of slots for work that must not all run at once (a restarted shim's hundreds
// of log followers each asking Docker first; connections to Docker): `acquire` waits for a free
// one, in order.
export class Slots {
  private free: number;
  /** Who waits, in order; a Set so that a waiter who gives up leaves it at once. */
  private readonly queue = new Set<() => void>();

  constructor(readonly count: number) {
    this.free = count;
  }

  /** Slots taken now. */
  get inUse(): number {
    return this.count - this.free;
  }

  /** Acquirers waiting for a slot. */
  get waiting(): number {
    return this.queue.size;
  }

  /**
   * Resolves with the slot's release (idempotent) once a slot is free. Rejects with the
   * signal's reason if it aborts first; the waiter then holds nothing.
   */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) throw signal.reason;
    if (this.free > 0) this.free--;
    else await this.wait(signal);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.queue.values().next();
      if (next.done) this.free++;
      else {
        this.queue.delete(next.value);
        next.value();
      }
    };
  }

  private wait(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.queue.delete(grant);
        reject(signal?.reason);
      };
      const grant = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.add(grant);
    });
  }
}
