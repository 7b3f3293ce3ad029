// What the shim asks of Docker, as one small typed interface, and the list of its calls. The
// implementation is ./engine-api-client.ts; the counting wrapper (./instrumented-client.ts), the
// state cache's (../docker-cache/caching-client.ts) and the tests' fake stand on
// ./pass-through-client.ts, which makes from DOCKER_CALLS every call they do not write. A new
// call is one line in the interface, one in DOCKER_CALLS, and its implementation.
import type { Duplex, Readable } from 'node:stream';
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
}

/** A call of the Docker client, by name (a fixed set: also the label of the Docker metrics). */
export type DockerCall = Exclude<keyof DockerClient, 'endpoint'>;

/** Every call, once (a call missing here, or one the interface lacks, does not compile). */
const CALLS: Record<DockerCall, true> = {
  ping: true,
  version: true,
  info: true,
  listContainers: true,
  inspectContainer: true,
  createContainer: true,
  startContainer: true,
  stopContainer: true,
  killContainer: true,
  removeContainer: true,
  updateContainer: true,
  containerLogs: true,
  createExec: true,
  startExec: true,
  inspectExec: true,
  resizeExec: true,
  attachContainer: true,
  resizeContainer: true,
  listImages: true,
  inspectImage: true,
  pullImage: true,
  removeImage: true,
  importImage: true,
  systemDataUsage: true,
  events: true,
};

export const DOCKER_CALLS: readonly DockerCall[] = Object.keys(CALLS) as DockerCall[];
