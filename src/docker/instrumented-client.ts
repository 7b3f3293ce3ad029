// A DockerClient that tells a recorder of every operation it passes on: its name, how long it
// took and, when it failed, what kind of failure it was. It sits right over the Docker
// implementation and under the state cache (../docker-cache/caching-client.ts), so only calls
// that reach Docker are counted, never answers the cache gives. Without a metrics endpoint
// app.ts leaves it out altogether.
import {
  CancelledError,
  DockerAuthError,
  DockerBadRequestError,
  DockerConflictError,
  DockerNotFoundError,
  DockerNotModifiedError,
  DockerServerError,
  DockerTimeoutError,
  DockerUnreachableError,
} from '../errors';
import type { DockerCall, DockerClient, EventsOptions, EventsQuery } from './client';
import { fillCalls, PassThroughClient, type AnyCall } from './pass-through-client';
import type { DockerEvent } from './types';

export type DockerErrorKind =
  | 'not_found'
  | 'conflict'
  | 'not_modified'
  | 'bad_request'
  | 'auth'
  | 'timeout'
  | 'unreachable'
  | 'server'
  | 'cancelled'
  | 'other';

/** Told of each finished Docker operation; `errorKind` is undefined when it succeeded. */
export interface DockerCallRecorder {
  observe(operation: DockerCall, seconds: number, errorKind: DockerErrorKind | undefined): void;
}

const KIND_BY_CLASS: ReadonlyArray<[abstract new (...args: never[]) => Error, DockerErrorKind]> = [
  [DockerNotFoundError, 'not_found'],
  [DockerConflictError, 'conflict'],
  [DockerNotModifiedError, 'not_modified'],
  [DockerBadRequestError, 'bad_request'],
  [DockerAuthError, 'auth'],
  [DockerTimeoutError, 'timeout'],
  [DockerUnreachableError, 'unreachable'],
  [DockerServerError, 'server'],
  [CancelledError, 'cancelled'],
];

/** The kind of a failure the Docker client threw (its typed errors; anything else is `other`). */
export function dockerErrorKind(err: unknown): DockerErrorKind {
  for (const [cls, kind] of KIND_BY_CLASS) if (err instanceof cls) return kind;
  return 'other';
}

function secondsSince(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e9;
}

export class InstrumentedDockerClient extends PassThroughClient {
  /** Every call but `events`, timed until its promise settles (for a stream or a session: until it is open). */
  static {
    fillCalls(this, (call) =>
      async function (this: InstrumentedDockerClient, ...args: never[]): Promise<unknown> {
        const started = process.hrtime.bigint();
        try {
          const result = await (this.docker[call] as AnyCall)(...args);
          this.recorder.observe(call, secondsSince(started), undefined);
          return result;
        } catch (err) {
          this.recorder.observe(call, secondsSince(started), dockerErrorKind(err));
          throw err;
        }
      },
    );
  }

  constructor(
    docker: DockerClient,
    private readonly recorder: DockerCallRecorder,
  ) {
    super(docker);
  }

  /**
   * Counted once per subscription: as done when Docker accepts it (timed to that moment), or
   * as failed when the stream fails before. A stream lost later is the state cache's reconnect.
   */
  override async *events(query: EventsQuery, opts?: EventsOptions): AsyncIterable<DockerEvent> {
    const started = process.hrtime.bigint();
    let subscribed = false;
    const onSubscribed = (): void => {
      subscribed = true;
      this.recorder.observe('events', secondsSince(started), undefined);
      opts?.onSubscribed?.();
    };
    try {
      yield* this.docker.events(query, { ...opts, onSubscribed });
    } catch (err) {
      if (!subscribed) this.recorder.observe('events', secondsSince(started), dockerErrorKind(err));
      throw err;
    }
  }
}
