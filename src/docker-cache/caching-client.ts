// A DockerClient that answers the read calls kubelet polls from the state cache, and passes
// everything else to Docker. It answers only while the cache is synced and only queries whose
// answer it holds completely (see list-query.ts); mutating calls go to Docker and then refresh
// what they changed before returning, so a read after any mutating call reflects it.
// Documents handed out are shared with the cache: callers read them and never modify them.
import type { Duplex, Readable } from 'node:stream';
import type { CallOptions, DockerClient, EventsOptions, ImageImportQuery, LogsOptions } from '../docker/client';
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
import { DockerNotFoundError } from '../errors';
import { isFullId } from '../conventions/ids';
import { cacheableListQuery, matchesListQuery } from './list-query';
import type { DockerStateCache } from './state-cache';
import { statusText, summaryFromInspect } from './summary';
import { listObjectsFromDocker, matchesObjectQuery, objectFromInspect, type ObjectQuery, type ShimObject } from '../docker/shim-objects';

export class CachingDockerClient implements DockerClient {
  readonly endpoint: string;
  /**
   * Each held document's list entry, made once: the lists are asked for every second and the
   * documents change rarely (a changed container is a new document). Only Status follows the clock.
   */
  private readonly summaries = new WeakMap<ContainerInspect, ContainerSummary>();
  /** Each held document's object (null: not one of the shim's), made once as its list entry is. */
  private readonly objects = new WeakMap<ContainerInspect, ShimObject | null>();

  constructor(
    private readonly docker: DockerClient,
    private readonly cache: DockerStateCache,
  ) {
    this.endpoint = docker.endpoint;
  }

  // --- answered from the cache when it can ---

  async listContainers(query: { all: boolean; filters?: DockerFilters; size?: boolean }, opts?: CallOptions): Promise<ContainerSummary[]> {
    // As Docker's own client does: a caller that gave up gets its reason, not an answer.
    opts?.signal?.throwIfAborted();
    const q = this.cache.synced ? cacheableListQuery(query) : undefined;
    if (!q) return this.docker.listContainers(query, opts);
    const matched: ContainerInspect[] = [];
    for (const c of this.cache.containers.values()) {
      if (matchesListQuery({ id: c.Id, running: c.State.Running, labels: c.Config.Labels }, q)) matched.push(c);
    }
    let images: Map<string, string>;
    try {
      images = await this.listedImageNames(matched, opts);
    } catch {
      // Only Docker knows what an image reference it cannot resolve for us shows as.
      return this.docker.listContainers(query, opts);
    }
    const now = Date.now();
    // Docker lists the newest first.
    return matched.map((c) => this.summaryOf(c, images.get(c.Id) ?? c.Image, now)).sort((a, b) => b.Created - a.Created);
  }

  private summaryOf(c: ContainerInspect, image: string, nowMs: number): ContainerSummary {
    let made = this.summaries.get(c);
    if (!made || made.Image !== image) {
      made = summaryFromInspect(c, image, nowMs);
      this.summaries.set(c, made);
    }
    return { ...made, Status: statusText(c.State, nowMs) };
  }

  async listObjects(query: ObjectQuery, opts?: CallOptions): Promise<ShimObject[]> {
    opts?.signal?.throwIfAborted();
    if (!this.cache.synced) return listObjectsFromDocker(this.docker, query, opts);
    const matched: ContainerInspect[] = [];
    for (const c of this.cache.containers.values()) {
      const o = this.objectOf(c, undefined);
      if (o && matchesObjectQuery(o, query)) matched.push(c);
    }
    // A sandbox's image is nobody's business (CRI's PodSandbox has none): no image lookup,
    // which may have to ask Docker (after an image event), stands between a pod list and memory.
    let images: Map<string, string> | undefined;
    if (query.kind === 'container') {
      try {
        images = await this.listedImageNames(matched, opts);
      } catch {
        return listObjectsFromDocker(this.docker, query, opts);
      }
    }
    // Docker lists the newest first.
    return matched.map((c) => this.objectOf(c, images?.get(c.Id))!).sort((a, b) => b.createdSeconds - a.createdSeconds);
  }

  /** The document's object; `image` (undefined: not known yet) is what Docker's list shows as its Image. */
  private objectOf(c: ContainerInspect, image: string | undefined): ShimObject | undefined {
    let made = this.objects.get(c);
    if (made === undefined || (made !== null && image !== undefined && made.image !== image)) {
      made = objectFromInspect(c, image ?? c.Config.Image) ?? null;
      this.objects.set(c, made);
    }
    return made ?? undefined;
  }

  async inspectContainer(id: string, opts?: CallOptions): Promise<ContainerInspect> {
    opts?.signal?.throwIfAborted();
    if (this.cache.synced && isFullId(id)) {
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
    const id = await this.docker.createContainer(spec, opts);
    await this.cache.refreshContainer(id);
    return id;
  }

  async startContainer(id: string, opts?: CallOptions): Promise<void> {
    await this.afterwards(id, this.docker.startContainer(id, opts));
  }

  async stopContainer(id: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    await this.afterwards(id, this.docker.stopContainer(id, timeoutSeconds, opts));
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
    if (held !== undefined) await this.cache.forgetContainer(held);
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

  startExec(execId: string, query: { tty: boolean; stdin: boolean }, opts?: CallOptions): Promise<Duplex> {
    return this.docker.startExec(execId, query, opts);
  }

  inspectExec(execId: string, opts?: CallOptions): Promise<ExecInspect> {
    return this.docker.inspectExec(execId, opts);
  }

  resizeExec(execId: string, size: { width: number; height: number }, opts?: CallOptions): Promise<void> {
    return this.docker.resizeExec(execId, size, opts);
  }

  attachContainer(id: string, query: { stdin: boolean; stdout: boolean; stderr: boolean }, opts?: CallOptions): Promise<Duplex> {
    return this.docker.attachContainer(id, query, opts);
  }

  resizeContainer(id: string, size: { width: number; height: number }, opts?: CallOptions): Promise<void> {
    return this.docker.resizeContainer(id, size, opts);
  }

  systemDataUsage(opts?: CallOptions): Promise<SystemDataUsage> {
    return this.docker.systemDataUsage(opts);
  }

  events(query: { since?: number; filters?: DockerFilters }, opts?: EventsOptions): AsyncIterable<DockerEvent> {
    return this.docker.events(query, opts);
  }

  demux(source: Readable, stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream): void {
    this.docker.demux(source, stdout, stderr);
  }

  // --- helpers ---

  /**
   * Waits for a mutating call, then refreshes the container it named, whether the call
   * succeeded or not (a failed or timed-out call may still have changed it).
   */
  private async afterwards(idOrName: string, call: Promise<void>): Promise<void> {
    try {
      await call;
    } finally {
      const id = this.heldIdOf(idOrName);
      if (id !== undefined) await this.cache.refreshContainer(id);
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

  /** What Docker shows as each container's Image: its reference while that still names its image. */
  private async listedImageNames(containers: readonly ContainerInspect[], opts?: CallOptions): Promise<Map<string, string>> {
    const refs = new Map<string, string | undefined>();
    for (const c of containers) if (c.Config.Image) refs.set(c.Config.Image, undefined);
    await Promise.all(
      [...refs.keys()].map(async (ref) => {
        try {
          refs.set(ref, (await this.cache.images.inspectImage(ref, opts)).Id);
        } catch (err) {
          if (!(err instanceof DockerNotFoundError)) throw err;
        }
      }),
    );
    const out = new Map<string, string>();
    for (const c of containers) out.set(c.Id, refs.get(c.Config.Image) === c.Image ? c.Config.Image : c.Image);
    return out;
  }
}
