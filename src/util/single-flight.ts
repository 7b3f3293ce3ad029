// Identical expensive reads that overlap share one computation: a caller asking for a key whose
// work is under way waits for that work instead of starting its own. The work has a signal of
// its own, aborted only when every caller waiting for it has given up, so one caller's cancel
// or deadline never spoils the answer another still waits for, and nothing runs on for nobody.
// Only work in flight is shared: once it settles, the next caller starts afresh.

interface Flight {
  readonly result: Promise<unknown>;
  readonly controller: AbortController;
  callers: number;
}

export class SingleFlight {
  private readonly flights = new Map<string, Flight>();

  /** Works in flight (for tests and metrics). */
  get size(): number {
    return this.flights.size;
  }

  /**
   * `work`'s answer for `key`, shared with every caller that asks for the same key while it
   * runs. Rejects with `signal`'s reason as soon as it aborts, whatever the work does. Keys name
   * the answer's type too (e.g. `ListPodSandboxMetrics`): the same key must mean the same `T`.
   */
  run<T>(key: string, signal: AbortSignal, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const flight = this.flights.get(key) ?? this.start(key, work);
    flight.callers++;
    return new Promise<T>((resolve, reject) => {
      let waiting = true;
      const onAbort = (): void => {
        if (!waiting) return;
        waiting = false;
        this.leave(key, flight, signal.reason);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      flight.result.then(
        (value) => {
          signal.removeEventListener('abort', onAbort);
          if (!waiting) return;
          waiting = false;
          resolve(value as T);
        },
        (err: unknown) => {
          signal.removeEventListener('abort', onAbort);
          if (!waiting) return;
          waiting = false;
          reject(err);
        },
      );
    });
  }

  private start<T>(key: string, work: (signal: AbortSignal) => Promise<T>): Flight {
    const controller = new AbortController();
    // Started on a later microtask, so that a work that throws at once rejects like any other.
    const result = Promise.resolve().then(() => work(controller.signal));
    const flight: Flight = { result, controller, callers: 0 };
    this.flights.set(key, flight);
    const forget = (): void => {
      if (this.flights.get(key) === flight) this.flights.delete(key);
    };
    // Nobody may be waiting when it fails (all gave up): that failure is nobody's to hear.
    result.then(forget, forget);
    return flight;
  }

  /** A caller gave up; the last one out stops the work, and a later caller starts anew. */
  private leave(key: string, flight: Flight, reason: unknown): void {
    flight.callers--;
    if (flight.callers > 0) return;
    if (this.flights.get(key) === flight) this.flights.delete(key);
    flight.controller.abort(reason);
  }
}
