// A Docker request's one signal: aborted when its deadline passes or its caller gives up,
// whichever comes first. One timer and one AbortController, both dropped when the request ends:
// AbortSignal.timeout with AbortSignal.any cost ~17 us of CPU per request on Node 20
// (measured), and AbortSignal.timeout's timer stays alive until it fires, minutes after its
// request was answered. A caller's signal gets one listener however many of its requests run
// at once (a listener each would pass EventTarget's warning threshold of 10 on the first
// handler that asks Docker eleven things at once).

/** The requests running for each caller's signal, told by its one listener. */
const requestsOf = new WeakMap<AbortSignal, Set<RequestDeadline>>();

function followCaller(caller: AbortSignal, deadline: RequestDeadline): void {
  let requests = requestsOf.get(caller);
  if (!requests) {
    const running = new Set<RequestDeadline>();
    requests = running;
    requestsOf.set(caller, running);
    caller.addEventListener(
      'abort',
      () => {
        for (const r of running) r.callerAborted();
        running.clear();
      },
      { once: true },
    );
  }
  requests.add(deadline);
}

export class RequestDeadline {
  /** What the request and its wait for a connection listen to; undefined: nothing ever aborts it. */
  readonly signal: AbortSignal | undefined;
  private timedOutAt = false;
  private timer: NodeJS.Timeout | undefined;
  private controller: AbortController | undefined;

  /**
   * `ms`: the deadline from now (a timer's delay: see util/timer-delay), or undefined for a
   * request bound only by its caller (a stream), whose signal is then the caller's own.
   */
  constructor(
    ms: number | undefined,
    private readonly caller: AbortSignal | undefined,
  ) {
    if (ms === undefined) {
      this.signal = caller;
      return;
    }
    const controller = new AbortController();
    this.controller = controller;
    this.signal = controller.signal;
    if (caller?.aborted) {
      controller.abort(caller.reason);
      return;
    }
    if (caller) followCaller(caller, this);
    this.timer = setTimeout(this.onTimeout, ms);
    // As AbortSignal.timeout's: a pending request holds the process through its socket already.
    this.timer.unref();
  }

  /** Whether the deadline passed (rather than the caller giving up) before end(). */
  get timedOut(): boolean {
    return this.timedOutAt;
  }

  /** The request is over: its timer stops and its caller's abort no longer reaches it. */
  end(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.caller) requestsOf.get(this.caller)?.delete(this);
  }

  private readonly onTimeout = (): void => {
    this.timer = undefined;
    this.timedOutAt = true;
    if (this.caller) requestsOf.get(this.caller)?.delete(this);
    this.controller!.abort(new DOMException('The request passed its deadline', 'TimeoutError'));
  };

  /** @internal the caller gave up while the request ran. */
  callerAborted(): void {
    this.end();
    this.controller!.abort(this.caller!.reason);
  }
}
