// A DockerClient that answers container and image inspects and the image list from the state
// cache, and passes everything else to Docker (the shim's objects are listed through
// ../object-store, which reads the cache itself). It answers only while the cache is synced;
// mutating calls go to Docker and return as soon as Docker answered, while the cache refreshes
// what they changed: a read from the cache (here and in the object store) waits for the
// refreshes of every mutating call that returned before it, so it reflects them (the caller of
// a create or a stop does not also wait for an inspect it has no use for); one still pending
// past CATCH_UP_WAIT_MS sends the read to Docker.
// Documents handed out are shared with the cache: callers read them and never modify them.
import type { Duplex, Readable } from 'node:stream';
import type { CallOptions, DockerClient, EventsOptions, EventsQuery, ImageImportQuery, LogsOptions, SessionOptions } from '../docker/client';
import type { FramePieceListener } from '../docker/stream-frames';
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
} from '../docker/types';
import { isFullId } from '../conventions/ids';
import type { DockerStateCache } from './state-cache';

export class CachingDockerClient implements DockerClient {
  readonly endpoint: string;

  constructor(
    private readonly docker: DockerClient,
    private readonly cache: DockerStateCache,
  ) {
    this.endpoint = docker.endpoint;
  }

  // --- answered from the cache when it can ---

  async inspectContainer(id: string, opts?: CallOptions): Promise<ContainerInspect> {
    opts?.signal?.throwIfAborted();
    if ((await this.cache.caughtUp(opts?.signal)) && isFullId(id)) {
      const held = this.cache.containers.get(id);
      if (held) return held;
    }
    return this.docker.inspectContainer(id, opts);
  }

  listImages(query: { all?: boolean; filters?: DockerFilters; digests?: boolean }, opts?: CallOptions): Promise<ImageSummary[]> {
    return this.cache.synced ? this.cache.images.listImages(query, opts) : this.docker.listImages(query, opts);
  }

  inspectImage(ref: string, opts?: CallOptions): Promise<ImageInspect> {
    return this.cache.synced ? this.cache.images.inspectImage(ref, opts) : this.docker.inspectImage(ref, opts);
  }

  // --- mutating: Docker first, then the cache catches up before the caller hears back ---

  async createContainer(spec: ContainerCreateSpec, opts?: CallOptions): Promise<string> {
    if (spec.name === undefined) {
      const made = await this.docker.createContainer(spec, opts);
      this.cache.track(this.cache.refreshContainer(made));
      return made;
    }
    const announced = this.cache.expectEvent('create', { name: spec.name });
    let id: string | undefined;
    try {
      id = await this.docker.createContainer(spec, opts);
      return id;
    } finally {
      announced.settle(id, true);
    }
  }

  async startContainer(id: string, opts?: CallOptions): Promise<void> {
    // Docker announces only a start that changed something: one of a container not running.
    await this.announcedBy('start', id, (held) => !held.State.Running, () => this.docker.startContainer(id, opts), opts);
  }

  async stopContainer(id: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    // A stop of a running container ends in its `die` (the cache follows no `stop` event).
    await this.announcedBy('die', id, (held) => held.State.Running, () => this.docker.stopContainer(id, timeoutSeconds, opts), opts);
  }

  async killContainer(id: string, signal: string, opts?: CallOptions): Promise<void> {
    await this.afterwards(id, this.docker.killContainer(id, signal, opts));
  }

  async removeContainer(id: string, query: { force: boolean; removeVolumes: boolean }, opts?: CallOptions): Promise<void> {
    try {
      await this.docker.removeContainer(id, query, opts);
    } catch (err) {
      await this.afterwards(id, Promise.resolve());
      throw err;
    }
    // Removed: an ID never comes back, so there is nothing to inspect.
    const held = this.heldIdOf(id);
    if (held !== undefined) this.cache.track(this.cache.forgetContainer(held));
  }

  async updateContainer(id: string, spec: ContainerUpdateSpec, opts?: CallOptions): Promise<void> {
    await this.afterwards(id, this.docker.updateContainer(id, spec, opts));
  }

  async pullImage(ref: string, auth: RegistryAuth | undefined, onProgress: (p: PullProgress) => void, opts?: CallOptions): Promise<void> {
    try {
      await this.docker.pullImage(ref, auth, onProgress, opts);
    } finally {
      // Even a failed pull may have stored some of it.
      this.cache.images.invalidate();
    }
  }

  async importImage(layer: Buffer, query: ImageImportQuery, opts?: CallOptions): Promise<void> {
    try {
      await this.docker.importImage(layer, query, opts);
    } finally {
      this.cache.images.invalidate();
    }
  }

  async removeImage(ref: string, query: { force: boolean; noprune: boolean }, opts?: CallOptions): Promise<ImageDeleteItem[]> {
    try {
      return await this.docker.removeImage(ref, query, opts);
    } finally {
      this.cache.images.invalidate();
    }
  }

  // --- passed through ---

  listContainers(query: { all: boolean; filters?: DockerFilters; size?: boolean }, opts?: CallOptions): Promise<ContainerSummary[]> {
    return this.docker.listContainers(query, opts);
  }

  ping(opts?: CallOptions): Promise<void> {
    return this.docker.ping(opts);
  }

  version(opts?: CallOptions): Promise<DockerVersion> {
    return this.docker.version(opts);
  }

  info(opts?: CallOptions): Promise<DockerInfo> {
    return this.docker.info(opts);
  }

  containerLogs(id: string, query: LogsOptions): Promise<Readable> {
    return this.docker.containerLogs(id, query);
  }

  createExec(containerId: string, spec: ExecCreateSpec, opts?: CallOptions): Promise<string> {
    return this.docker.createExec(containerId, spec, opts);
  }

  startExec(execId: string, query: { tty: boolean; stdin: boolean }, opts?: SessionOptions): Promise<Duplex> {
    return this.docker.startExec(execId, query, opts);
  }

  inspectExec(execId: string, opts?: CallOptions): Promise<ExecInspect> {
    return this.docker.inspectExec(execId, opts);
  }

  resizeExec(execId: string, size: { width: number; height: number }, opts?: CallOptions): Promise<void> {
    return this.docker.resizeExec(execId, size, opts);
  }

  attachContainer(id: string, query: { stdin: boolean; stdout: boolean; stderr: boolean }, opts?: SessionOptions): Promise<Duplex> {
    return this.docker.attachContainer(id, query, opts);
  }

  resizeContainer(id: string, size: { width: number; height: number }, opts?: CallOptions): Promise<void> {
    return this.docker.resizeContainer(id, size, opts);
  }

  systemDataUsage(opts?: CallOptions): Promise<SystemDataUsage> {
    return this.docker.systemDataUsage(opts);
  }

  events(query: EventsQuery, opts?: EventsOptions): AsyncIterable<DockerEvent> {
    return this.docker.events(query, opts);
  }

  demux(source: Readable, take: FramePieceListener): void {
    this.docker.demux(source, take);
  }

  // --- helpers ---

  /**
   * Waits for a mutating call, then has the cache refresh the container it named, whether the
   * call succeeded or not (a failed or timed-out call may still have changed it).
   */
  private async afterwards(idOrName: string, call: Promise<void>): Promise<void> {
    try {
      await call;
    } finally {
      const id = this.heldIdOf(idOrName);
      if (id !== undefined) this.cache.track(this.cache.refreshContainer(id));
    }
  }

  /**
   * A mutating call Docker announces with an `action` event before it answers, when `announces`
   * says so of the container as held: the cache takes the refresh that event sets off for the
   * call's own (see DockerStateCache.expectEvent); otherwise as `afterwards`. The container is
   * judged as held once the shim's own changes are applied: a stop's refresh still under way
   * would have it running, and an event Docker will not send waited for. (Past
   * CATCH_UP_WAIT_MS it is judged as held all the same: a wrong guess costs an inspect more,
   * or the call's refresh OWN_EVENT_WAIT_MS later, never a wrong document.)
   */
  private async announcedBy(action: string, idOrName: string, announces: (held: ContainerInspect) => boolean, call: () => Promise<void>, opts?: CallOptions): Promise<void> {
    await this.cache.caughtUp(opts?.signal);
    const id = this.heldIdOf(idOrName);
    const held = id === undefined ? undefined : this.cache.containers.get(id);
    if (id === undefined || held === undefined || !announces(held)) return this.afterwards(idOrName, call());
    const announced = this.cache.expectEvent(action, { id });
    let ok = false;
    try {
      await call();
      ok = true;
    } finally {
      announced.settle(id, ok);
    }
  }

  /**
   * The full ID of the container a call named. A name or prefix the cache does not hold names
   * no tracked container the cache knows of: nothing to refresh (its own events will tell).
   */
  private heldIdOf(idOrName: string): string | undefined {
    if (isFullId(idOrName)) return idOrName;
    const name = idOrName.startsWith('/') ? idOrName : `/${idOrName}`;
    let found: string | undefined;
    for (const c of this.cache.containers.values()) {
      if (c.Name === name) return c.Id;
      if (c.Id.startsWith(idOrName)) {
        if (found !== undefined) return undefined;
        found = c.Id;
      }
    }
    return found;
  }
}
