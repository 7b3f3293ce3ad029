// A DockerClient that tells a recorder of every operation it passes on: its name, how long it
// took and, when it failed, what kind of failure it was. It sits right over the Docker
// implementation and under the state cache (../docker-cache/caching-client.ts), so only calls
// that reach Docker are counted, never answers the cache gives. Without a metrics endpoint
// app.ts leaves it out altogether.
import type { Duplex, Readable } from 'node:stream';
import type { FramePieceListener } from './stream-frames';
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
import type { CallOptions, DockerClient, EventsOptions, EventsQuery, ImageImportQuery, LogsOptions, SessionOptions } from './client';
import type {
  ContainerCreateSpec,
  ContainerInspect,
  ContainerSummary,
  ContainerUpdateSpec,
  DockerEvent,
  DockerFilters,
  DockerInfo,
  DockerVersion,
  ExecCreateSpec,
  ExecInspect,
  ImageDeleteItem,
  ImageInspect,
  ImageSummary,
  PullProgress,
  RegistryAuth,
  SystemDataUsage,
} from './types';

/** The Docker operations, named as the interface's methods (a fixed set, so a bounded label). */
export type DockerOperation = Exclude<keyof DockerClient, 'endpoint' | 'demux'>;

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
  observe(operation: DockerOperation, seconds: number, errorKind: DockerErrorKind | undefined): void;
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

export class InstrumentedDockerClient implements DockerClient {
  readonly endpoint: string;

  constructor(
    private readonly docker: DockerClient,
    private readonly recorder: DockerCallRecorder,
  ) {
    this.endpoint = docker.endpoint;
  }

  private async timed<T>(operation: DockerOperation, call: () => Promise<T>): Promise<T> {
    const started = process.hrtime.bigint();
    try {
      const result = await call();
      this.recorder.observe(operation, secondsSince(started), undefined);
      return result;
    } catch (err) {
      this.recorder.observe(operation, secondsSince(started), dockerErrorKind(err));
      throw err;
    }
  }

  ping(opts?: CallOptions): Promise<void> {
    return this.timed('ping', () => this.docker.ping(opts));
  }

  version(opts?: CallOptions): Promise<DockerVersion> {
    return this.timed('version', () => this.docker.version(opts));
  }

  info(opts?: CallOptions): Promise<DockerInfo> {
    return this.timed('info', () => this.docker.info(opts));
  }

  listContainers(query: { all: boolean; filters?: DockerFilters; size?: boolean }, opts?: CallOptions): Promise<ContainerSummary[]> {
    return this.timed('listContainers', () => this.docker.listContainers(query, opts));
  }

  inspectContainer(id: string, opts?: CallOptions): Promise<ContainerInspect> {
    return this.timed('inspectContainer', () => this.docker.inspectContainer(id, opts));
  }

  createContainer(spec: ContainerCreateSpec, opts?: CallOptions): Promise<string> {
    return this.timed('createContainer', () => this.docker.createContainer(spec, opts));
  }

  startContainer(id: string, opts?: CallOptions): Promise<void> {
    return this.timed('startContainer', () => this.docker.startContainer(id, opts));
  }

  stopContainer(id: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    return this.timed('stopContainer', () => this.docker.stopContainer(id, timeoutSeconds, opts));
  }

  killContainer(id: string, signal: string, opts?: CallOptions): Promise<void> {
    return this.timed('killContainer', () => this.docker.killContainer(id, signal, opts));
  }

  removeContainer(id: string, query: { force: boolean; removeVolumes: boolean }, opts?: CallOptions): Promise<void> {
    return this.timed('removeContainer', () => this.docker.removeContainer(id, query, opts));
  }

  updateContainer(id: string, spec: ContainerUpdateSpec, opts?: CallOptions): Promise<void> {
    return this.timed('updateContainer', () => this.docker.updateContainer(id, spec, opts));
  }

  /** Timed until Docker answers with the stream, not for the stream's life. */
  containerLogs(id: string, query: LogsOptions): Promise<Readable> {
    return this.timed('containerLogs', () => this.docker.containerLogs(id, query));
  }

  createExec(containerId: string, spec: ExecCreateSpec, opts?: CallOptions): Promise<string> {
    return this.timed('createExec', () => this.docker.createExec(containerId, spec, opts));
  }

  /** Timed until the connection is hijacked, not for the session's life. */
  startExec(execId: string, query: { tty: boolean; stdin: boolean }, opts?: SessionOptions): Promise<Duplex> {
    return this.timed('startExec', () => this.docker.startExec(execId, query, opts));
  }

  inspectExec(execId: string, opts?: CallOptions): Promise<ExecInspect> {
    return this.timed('inspectExec', () => this.docker.inspectExec(execId, opts));
  }

  resizeExec(execId: string, size: { width: number; height: number }, opts?: CallOptions): Promise<void> {
    return this.timed('resizeExec', () => this.docker.resizeExec(execId, size, opts));
  }

  attachContainer(id: string, query: { stdin: boolean; stdout: boolean; stderr: boolean }, opts?: SessionOptions): Promise<Duplex> {
    return this.timed('attachContainer', () => this.docker.attachContainer(id, query, opts));
  }

  resizeContainer(id: string, size: { width: number; height: number }, opts?: CallOptions): Promise<void> {
    return this.timed('resizeContainer', () => this.docker.resizeContainer(id, size, opts));
  }

  listImages(query: { all?: boolean; filters?: DockerFilters; digests?: boolean }, opts?: CallOptions): Promise<ImageSummary[]> {
    return this.timed('listImages', () => this.docker.listImages(query, opts));
  }

  inspectImage(ref: string, opts?: CallOptions): Promise<ImageInspect> {
    return this.timed('inspectImage', () => this.docker.inspectImage(ref, opts));
  }

  /** Timed to the pull's end (the whole download). */
  pullImage(ref: string, auth: RegistryAuth | undefined, onProgress: (p: PullProgress) => void, opts?: CallOptions): Promise<void> {
    return this.timed('pullImage', () => this.docker.pullImage(ref, auth, onProgress, opts));
  }

  removeImage(ref: string, query: { force: boolean; noprune: boolean }, opts?: CallOptions): Promise<ImageDeleteItem[]> {
    return this.timed('removeImage', () => this.docker.removeImage(ref, query, opts));
  }

  importImage(layer: Buffer, query: ImageImportQuery, opts?: CallOptions): Promise<void> {
    return this.timed('importImage', () => this.docker.importImage(layer, query, opts));
  }

  systemDataUsage(opts?: CallOptions): Promise<SystemDataUsage> {
    return this.timed('systemDataUsage', () => this.docker.systemDataUsage(opts));
  }

  /**
   * Counted once per subscription: as done when Docker accepts it (timed to that moment), or
   * as failed when the stream fails before. A stream lost later is the state cache's reconnect.
   */
  async *events(query: EventsQuery, opts?: EventsOptions): AsyncIterable<DockerEvent> {
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

  demux(source: Readable, take: FramePieceListener): void {
    this.docker.demux(source, take);
  }
}
