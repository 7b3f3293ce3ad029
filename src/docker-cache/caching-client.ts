// A DockerClient that answers container and image inspects and the image list from the state
// cache, and passes everything else to Docker (the shim's objects are listed through
// ../object-store). Whether the cache answers is the cache's to say (`imagesOr`,
// `heldContainers` in ./state-cache.ts, which the object store asks too);
// mutating calls go to Docker and return as soon as Docker answered, while the cache refreshes
// what they changed: a read from the cache (here and in the object store) waits for the
// refreshes of every mutating call that returned before it, so it reflects them (the caller of
// a create or a stop does not also wait for an inspect it has no use for); one still pending
// past CATCH_UP_WAIT_MS sends the read to Docker.
// Documents handed out are shared with the cache: callers read them and never modify them.
import type { CallOptions, DockerClient, ImageImportQuery } from '../docker/client';
import { PassThroughClient } from '../docker/pass-through-client';
import type {
  ContainerCreateSpec,
  ContainerInspect,
  ContainerUpdateSpec,
  DockerFilters,
  ImageDeleteItem,
  ImageInspect,
  ImageSummary,
  PullProgress,
  RegistryAuth,
} from '../docker/types';
import { isFullId } from '../conventions/ids';
import type { DockerStateCache } from './state-cache';

export class CachingDockerClient extends PassThroughClient {
  constructor(
    docker: DockerClient,
    private readonly cache: DockerStateCache,
  ) {
    super(docker);
  }

  // --- answered from the cache when it can ---

  override async inspectContainer(id: string, opts?: CallOptions): Promise<ContainerInspect> {
    opts?.signal?.throwIfAborted();
    const containers = await this.cache.heldContainers(opts?.signal);
    if (containers && isFullId(id)) {
      const held = containers.get(id);
      if (held) return held;
    }
    return this.docker.inspectContainer(id, opts);
  }

  override listImages(query: { all?: boolean; filters?: DockerFilters; digests?: boolean }, opts?: CallOptions): Promise<ImageSummary[]> {
    return this.cache.imagesOr(this.docker).listImages(query, opts);
  }

  override inspectImage(ref: string, opts?: CallOptions): Promise<ImageInspect> {
    return this.cache.imagesOr(this.docker).inspectImage(ref, opts);
  }

  // --- mutating: Docker first, then the cache catches up before the caller hears back ---

  override async createContainer(spec: ContainerCreateSpec, opts?: CallOptions): Promise<string> {
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

  override async startContainer(id: string, opts?: CallOptions): Promise<void> {
    // Docker announces only a start that changed something: one of a container not running.
    await this.announcedBy('start', id, (held) => !held.State.Running, () => this.docker.startContainer(id, opts), opts);
  }

  override async stopContainer(id: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    // A stop of a running container ends in its `die` (the cache follows no `stop` event).
    await this.announcedBy('die', id, (held) => held.State.Running, () => this.docker.stopContainer(id, timeoutSeconds, opts), opts);
  }

  override async killContainer(id: string, signal: string, opts?: CallOptions): Promise<void> {
    await this.afterwards(id, this.docker.killContainer(id, signal, opts));
  }

  override async removeContainer(id: string, query: { force: boolean; removeVolumes: boolean }, opts?: CallOptions): Promise<void> {
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

  override async updateContainer(id: string, spec: ContainerUpdateSpec, opts?: CallOptions): Promise<void> {
    await this.afterwards(id, this.docker.updateContainer(id, spec, opts));
  }

  override async pullImage(ref: string, auth: RegistryAuth | undefined, onProgress: (p: PullProgress) => void, opts?: CallOptions): Promise<void> {
    try {
      await this.docker.pullImage(ref, auth, onProgress, opts);
    } finally {
      // Even a failed pull may have stored some of it.
      this.cache.images.invalidate();
    }
  }

  override async importImage(layer: Buffer, query: ImageImportQuery, opts?: CallOptions): Promise<void> {
    try {
      await this.docker.importImage(layer, query, opts);
    } finally {
      this.cache.images.invalidate();
    }
  }

  override async removeImage(ref: string, query: { force: boolean; noprune: boolean }, opts?: CallOptions): Promise<ImageDeleteItem[]> {
    try {
      return await this.docker.removeImage(ref, query, opts);
    } finally {
      this.cache.images.invalidate();
    }
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
