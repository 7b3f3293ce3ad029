// What the shim asks of Docker, as one small typed interface. The implementation over
// docker-modem is in ./dockerode-client.ts, the counting wrapper in ./instrumented-client.ts,
// and the state cache's wrapper in ../docker-cache/caching-client.ts; handlers see only this.
import type { Duplex, Readable } from 'node:stream';
import type { FramePieceListener } from './stream-frames';
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

/** Per-call options every method takes: the caller's cancellation. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options of a hijacked session (exec, attach). */
export interface SessionOptions extends CallOptions {
  /**
   * A user's session through the streaming server: its connection comes from the streams'
   * budget, never from the part kept for the kubelet's own calls (./socket-pool.ts).
   */
  userStream?: boolean;
}

/** Options of the event stream: `onSubscribed` runs once Docker has accepted the subscription. */
export interface EventsOptions extends CallOptions {
  onSubscribed?: () => void;
}

/** Which events: Unix seconds (fractional allowed). */
export interface EventsQuery {
  /** Replay Docker's in-memory log of recent events (moby keeps the latest 256) from this time on. */
  since?: number;
  /** Stop at this time: a time already past makes Docker replay its log and close the stream. */
  until?: number;
  filters?: DockerFilters;
}

export interface LogsOptions extends CallOptions {
  follow: boolean;
  stdout: boolean;
  stderr: boolean;
  /** Unix seconds (fractional allowed); only entries after it. */
  since?: number;
  timestamps?: boolean;
  tail?: number | 'all';
}

export interface ImageImportQuery {
  repo: string;
  tag: string;
  changes: string[];
}

export interface DockerClient {
  readonly endpoint: string;
  ping(opts?: CallOptions): Promise<void>;
  version(opts?: CallOptions): Promise<DockerVersion>;
  info(opts?: CallOptions): Promise<DockerInfo>;

  listContainers(query: { all: boolean; filters?: DockerFilters; size?: boolean }, opts?: CallOptions): Promise<ContainerSummary[]>;
  inspectContainer(id: string, opts?: CallOptions): Promise<ContainerInspect>;
  /** Returns the new container's ID. */
  createContainer(spec: ContainerCreateSpec, opts?: CallOptions): Promise<string>;
  startContainer(id: string, opts?: CallOptions): Promise<void>;
  /** Sends the stop signal, waits `timeoutSeconds`, then kills. Already stopped is not an error. */
  stopContainer(id: string, timeoutSeconds: number, opts?: CallOptions): Promise<void>;
  killContainer(id: string, signal: string, opts?: CallOptions): Promise<void>;
  removeContainer(id: string, query: { force: boolean; removeVolumes: boolean }, opts?: CallOptions): Promise<void>;
  updateContainer(id: string, spec: ContainerUpdateSpec, opts?: CallOptions): Promise<void>;
  /** Raw log stream (multiplexed unless the container has a TTY). Not subject to the request timeout. */
  containerLogs(id: string, query: LogsOptions): Promise<Readable>;

  createExec(containerId: string, spec: ExecCreateSpec, opts?: CallOptions): Promise<string>;
  /** Starts an exec and hands back its hijacked connection (multiplexed unless tty). */
  startExec(execId: string, query: { tty: boolean; stdin: boolean }, opts?: SessionOptions): Promise<Duplex>;
  inspectExec(execId: string, opts?: CallOptions): Promise<ExecInspect>;
  resizeExec(execId: string, size: { width: number; height: number }, opts?: CallOptions): Promise<void>;
  /** Attaches to a running container's main process: its hijacked connection (multiplexed unless the container has a TTY). */
  attachContainer(id: string, query: { stdin: boolean; stdout: boolean; stderr: boolean }, opts?: SessionOptions): Promise<Duplex>;
  resizeContainer(id: string, size: { width: number; height: number }, opts?: CallOptions): Promise<void>;

  listImages(query: { all?: boolean; filters?: DockerFilters; digests?: boolean }, opts?: CallOptions): Promise<ImageSummary[]>;
  inspectImage(ref: string, opts?: CallOptions): Promise<ImageInspect>;
  /**
   * Pulls `ref`, calling onProgress for each progress message. Not subject to the request
   * timeout (pulls are long); cancel it with opts.signal.
   */
  pullImage(ref: string, auth: RegistryAuth | undefined, onProgress: (p: PullProgress) => void, opts?: CallOptions): Promise<void>;
  removeImage(ref: string, query: { force: boolean; noprune: boolean }, opts?: CallOptions): Promise<ImageDeleteItem[]>;
  /** Imports the tar `layer` as a one-layer image `repo:tag`, with Dockerfile-style `changes` (ENTRYPOINT, LABEL). */
  importImage(layer: Buffer, query: ImageImportQuery, opts?: CallOptions): Promise<void>;
  systemDataUsage(opts?: CallOptions): Promise<SystemDataUsage>;

  /**
   * Docker's event stream, until the signal aborts, `until` is reached or the daemon closes it. Events that happen
   * after `opts.onSubscribed` has run are all delivered (Docker sends its headers on subscribing).
   */
  events(query: EventsQuery, opts?: EventsOptions): AsyncIterable<DockerEvent>;

  /**
   * Splits a multiplexed (non-TTY) stream into its stdout and stderr payloads, handed to `take`
   * as they arrive; `take` copies what it keeps before it returns (stream-frames.ts demuxInto).
   */
  demux(source: Readable, take: FramePieceListener): void;
}
