// A fixed number of slots for work that must not all run at once (a restarted shim's hundreds
// of log followers each asking Docker first): `acquire` waits for a free one, in order.
export class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(count: number) {
    this.free = count;
  }

  /** Resolves with the slot's release (idempotent) once a slot is free. */
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}
