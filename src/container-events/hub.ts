// Fans the container events out to every GetContainerEvents stream. The hub watches the state
// cache only while someone listens. Each change is captured at once (the state right after
// it), turned into messages one change at a time, so every listener sees them in the order
// they happened, and queued per listener. A listener whose queue fills (a client that does not
// read) is dropped with RESOURCE_EXHAUSTED instead of holding the others up or growing memory;
// when the cache stops vouching for its state every listener ends with UNAVAILABLE. Either way
// kubelet falls back to relisting.
import { errorMessage, ResourceExhaustedError, UnavailableError } from '../errors';
import type { Logger } from '../util/logger';

/** What the hub watches: the state cache's `listen`, as a watch of the synced cache (see ../docker-cache/state-cache.ts). */
export interface ChangeSource<C> {
  listen(watch: { containerChanged(change: C): void; unsynced(reason: string): void }): () => void;
}

/**
 * Called for each change as it happens: reads what it needs from the state right then and
 * returns the (possibly slower) step that makes the messages, or undefined when the change
 * means no event.
 */
export type EventBuilder<C, T> = (change: C) => (() => Promise<T[]>) | undefined;

interface HubOptions {
  /** Messages a listener may have waiting before it is dropped. */
  queueLimit: number;
}

const DEFAULT_QUEUE_LIMIT = 1024;

export class EventHub<C, T> {
  private readonly listeners = new Set<EventListener<T>>();
  private unwatch: (() => void) | undefined;
  /** The tail of the chain of changes being turned into messages. */
  private building: Promise<void> = Promise.resolve();
  private closedReason: string | undefined;

  constructor(
    private readonly source: ChangeSource<C>,
    private readonly build: EventBuilder<C, T>,
    private readonly log: Logger,
    private readonly options: HubOptions = { queueLimit: DEFAULT_QUEUE_LIMIT },
  ) {}

  get listenerCount(): number {
    return this.listeners.size;
  }

  /** A new listener; UNAVAILABLE when the cache is not in step with Docker right now. */
  listen(): EventListener<T> {
    if (this.closedReason !== undefined) throw new UnavailableError(`container events: ${this.closedReason}`);
    if (!this.unwatch) {
      try {
        this.unwatch = this.source.listen({
          containerChanged: (change) => this.changed(change),
          unsynced: (reason) => this.lost(reason),
        });
      } catch (err) {
        throw new UnavailableError(`container events: ${errorMessage(err)}; list the containers instead`);
      }
    }
    const listener = new EventListener<T>(this.options.queueLimit, (l) => this.remove(l));
    this.listeners.add(listener);
    return listener;
  }

  /**
   * Ends every stream with UNAVAILABLE and refuses new ones for good: a shutdown must not wait
   * out its grace period for streams that never end by themselves.
   */
  close(reason: string): void {
    this.closedReason = reason;
    this.failAll(new UnavailableError(`container events: ${reason}`));
    this.unwatch?.();
    this.unwatch = undefined;
  }

  private changed(change: C): void {
    let make: (() => Promise<T[]>) | undefined;
    try {
      make = this.build(change);
    } catch (err) {
      this.failAll(new UnavailableError(`container events: could not read a change: ${errorMessage(err)}`));
      return;
    }
    if (!make) return;
    // Only those listening when it happened hear of it.
    const audience = [...this.listeners];
    this.building = this.building.then(async () => {
      let messages: T[];
      try {
        messages = await make();
      } catch (err) {
        // A skipped event would leave kubelet wrong without knowing it; ending makes it relist.
        this.log.warn({ error: errorMessage(err) }, 'container event could not be built; ending the event streams');
        for (const l of audience) l.fail(new UnavailableError(`container events: could not build an event: ${errorMessage(err)}`));
        return;
      }
      for (const message of messages) for (const l of audience) l.offer(message);
    });
  }

  private lost(reason: string): void {
    this.unwatch = undefined;
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const l of listeners) l.fail(new UnavailableError(`container events: lost track of Docker (${reason}); list the containers again`));
  }

  private failAll(err: Error): void {
    for (const l of [...this.listeners]) l.fail(err);
  }

  private remove(listener: EventListener<T>): void {
    this.listeners.delete(listener);
    if (this.listeners.size === 0 && this.unwatch) {
      this.unwatch();
      this.unwatch = undefined;
    }
  }
}

/** One stream's queue. `next` hands out messages in order; a failure ends it for good. */
class EventListener<T> {
  private readonly queue: T[] = [];
  private failure: Error | undefined;
  private closed = false;
  private wake: (() => void) | undefined;
  private readonly endedPromise: Promise<void>;
  private markEnded: () => void = () => undefined;

  constructor(
    private readonly limit: number,
    private readonly onClose: (listener: EventListener<T>) => void,
  ) {
    this.endedPromise = new Promise<void>((resolve) => (this.markEnded = resolve));
  }

  /** Settles when the listener failed or was closed (to stop waiting on a slow client). */
  get ended(): Promise<void> {
    return this.endedPromise;
  }

  get queued(): number {
    return this.queue.length;
  }

  offer(message: T): void {
    if (this.closed) return;
    if (this.queue.length >= this.limit) {
      this.fail(new ResourceExhaustedError(`container events: the client fell ${this.limit} events behind and was dropped; list the containers again`));
      return;
    }
    this.queue.push(message);
    this.wakeUp();
  }

  fail(err: Error): void {
    if (this.closed) return;
    this.failure = err;
    this.queue.length = 0;
    this.close();
  }

  /** The next message; undefined once `signal` aborts or the listener was closed; throws its failure. */
  async next(signal: AbortSignal): Promise<T | undefined> {
    for (;;) {
      if (this.failure) throw this.failure;
      const message = this.queue.shift();
      if (message !== undefined) return message;
      if (this.closed || signal.aborted) return undefined;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          signal.removeEventListener('abort', done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose(this);
    this.markEnded();
    this.wakeUp();
  }

  private wakeUp(): void {
    this.wake?.();
  }
}
