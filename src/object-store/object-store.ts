// The one store of the shim's objects (`shim.objects`): sandboxes and containers asked for in
// the typed query of ./shim-objects.ts, images in its image part (./image-query.ts). While the state cache is synced it answers from the
// cache's inspect documents, each made into an object once; otherwise, and when an image
// reference only Docker can resolve stands in the way, from one Docker list call. Either way
// the same matcher decides, so both answers are the same but for `inspect`. Handlers find
// objects here only, never by a Docker list of their own: the one query about containers that
// are not the shim's (which use an image, for RemoveImage) is here too, answered by Docker.
import type { CallOptions, DockerClient } from '../docker/client';
import type { ContainerInspect, ImageSummary } from '../docker/types';
import type { DockerStateCache } from '../docker-cache/state-cache';
import { DockerNotFoundError } from '../errors';
import { type ImageQuery, matchesImageQuery } from './image-query';
import { isFullId } from '../conventions/ids';
import { dockerListOf, matchesObjectQuery, objectFromInspect, objectFromSummary, type ObjectKind, type ObjectQuery, type ShimIdentity, type ShimObject } from './shim-objects';

/** What the store reads of the state cache. */
type HeldState = Pick<DockerStateCache, 'containersNow' | 'heldContainers' | 'imagesOr'>;

/** Whoever needs to find the shim's objects takes this, not the store itself. */
export interface ObjectFinder {
  /** The shim's objects the query matches, newest first (as Docker lists). */
  list(query: ObjectQuery, opts?: CallOptions): Promise<ShimObject[]>;
  /** The images the query matches: Docker's top-level images (as `docker images` shows them), with digests. */
  list(query: ImageQuery, opts?: CallOptions): Promise<ImageSummary[]>;
  /**
   * What never changes of the shim's object of `kind` with this full ID, from what the state
   * cache holds now: without waiting for the shim's own changes still being applied (the refresh
   * after a stop, say), which only its state could be behind on. Undefined when the cache does
   * not hold it (unsynced, an ID prefix, an object made a moment ago): `list` knows.
   */
  identify(kind: ObjectKind, id: string): ShimIdentity | undefined;
  /**
   * The IDs of every container that uses the image with this ID, the shim's or not (one a user
   * made blocks a removal as well), from Docker's own list: the state cache holds only the
   * shim's containers, so this one query is never answered from it.
   */
  containersUsingImage(imageId: string, opts?: CallOptions): Promise<string[]>;
}

/** The one image list the store asks for: top-level images, with digests (the state cache keeps its answer). */
const IMAGE_LIST = { all: false, digests: true } as const;

/** The query answered by Docker's list (newest first, as Docker lists). */
export async function listObjectsFromDocker(docker: Pick<DockerClient, 'listContainers'>, q: ObjectQuery, opts?: CallOptions): Promise<ShimObject[]> {
  const ask = dockerListOf(q);
  if (!ask) return [];
  const listed = await docker.listContainers(ask, opts);
  const out: ShimObject[] = [];
  for (const c of listed) {
    const o = objectFromSummary(c);
    if (o && matchesObjectQuery(o, q)) out.push(o);
  }
  return out;
}

export class ShimObjectStore implements ObjectFinder {
  /** Each held document's object (null: not one of the shim's), made once: kubelet lists every second, documents change rarely. */
  private readonly objects = new WeakMap<ContainerInspect, ShimObject | null>();

  /** `held`: the state cache (none: every query goes to Docker). */
  constructor(
    private readonly docker: Pick<DockerClient, 'listContainers' | 'listImages' | 'inspectImage'>,
    private readonly held?: HeldState,
  ) {}

  list(query: ObjectQuery, opts?: CallOptions): Promise<ShimObject[]>;
  list(query: ImageQuery, opts?: CallOptions): Promise<ImageSummary[]>;
  list(query: ObjectQuery | ImageQuery, opts?: CallOptions): Promise<ShimObject[] | ImageSummary[]> {
    // As Docker's own client does: a caller that gave up gets its reason, not an answer.
    opts?.signal?.throwIfAborted();
    return query.kind === 'image' ? this.listImages(query, opts) : this.listObjects(query, opts);
  }

  identify(kind: ObjectKind, id: string): ShimIdentity | undefined {
    const containers = this.held?.containersNow;
    if (!containers || !isFullId(id)) return undefined;
    const c = containers.get(id);
    const o = c && this.objectOf(c, undefined);
    return o?.kind === kind ? o : undefined;
  }

  async containersUsingImage(imageId: string, opts?: CallOptions): Promise<string[]> {
    const listed = await this.docker.listContainers({ all: true }, opts);
    return listed.filter((c) => c.ImageID === imageId).map((c) => c.Id);
  }

  private async listImages(query: ImageQuery, opts?: CallOptions): Promise<ImageSummary[]> {
    const listed = await (this.held?.imagesOr(this.docker) ?? this.docker).listImages(IMAGE_LIST, opts);
    return listed.filter((image) => matchesImageQuery(image, query));
  }

  private async listObjects(query: ObjectQuery, opts?: CallOptions): Promise<ShimObject[]> {
    // What the shim's own calls changed, as they returned before this list was asked for: from
    // the cache once it applied them, else from Docker (a create a moment ago is never missed).
    const held = this.held;
    const containers = await held?.heldContainers(opts?.signal);
    if (!held || !containers) return listObjectsFromDocker(this.docker, query, opts);
    const matched: ContainerInspect[] = [];
    for (const c of containers.values()) {
      const o = this.objectOf(c, undefined);
      if (o && matchesObjectQuery(o, query)) matched.push(c);
    }
    // A sandbox's image is nobody's business (CRI's PodSandbox has none): no image lookup,
    // which may have to ask Docker (after an image event), stands between a pod list and memory.
    let images: Map<string, string> | undefined;
    if (query.kind !== 'sandbox') {
      try {
        // Synced (the containers came from the cache): the cache's image answers.
        images = await listedImageNames(held.imagesOr(this.docker), matched, opts);
      } catch {
        // Only Docker knows what an image reference it cannot resolve for us shows as.
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
}

/** What Docker shows as each container's Image: its reference while that still names its image. */
async function listedImageNames(imageReads: Pick<DockerClient, 'inspectImage'>, containers: readonly ContainerInspect[], opts?: CallOptions): Promise<Map<string, string>> {
  const refs = new Map<string, string | undefined>();
  for (const c of containers) if (c.Config.Image) refs.set(c.Config.Image, undefined);
  await Promise.all(
    [...refs.keys()].map(async (ref) => {
      try {
        refs.set(ref, (await imageReads.inspectImage(ref, opts)).Id);
      } catch (err) {
        if (!(err instanceof DockerNotFoundError)) throw err;
      }
    }),
  );
  const out = new Map<string, string>();
  for (const c of containers) out.set(c.Id, refs.get(c.Config.Image) === c.Image ? c.Config.Image : c.Image);
  return out;
}
