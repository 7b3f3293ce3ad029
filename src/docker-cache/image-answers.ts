// Answers of images/json and image inspect, kept until any image changes. Docker tells of
// every change by an image event (or a container commit), and the shim's own pulls and removals
// invalidate it too. An answer that was under way when the images changed is not kept: the
// generation it was asked in is over.
import type { CallOptions, DockerClient } from '../docker/client';
import type { DockerFilters, ImageInspect, ImageSummary } from '../docker/types';
import { DockerNotFoundError } from '../errors';

/** Answers kept per kind; past it the oldest goes, so no stream of odd references grows memory. */
const MAX_ENTRIES = 512;

type InspectAnswer = { found: true; image: ImageInspect } | { found: false; error: DockerNotFoundError };

export class ImageAnswers {
  private gen = 0;
  private readonly lists = new Map<string, ImageSummary[]>();
  private readonly inspects = new Map<string, InspectAnswer>();

  constructor(private readonly docker: DockerClient) {}

  /** Answers held (lists and inspects). */
  get size(): number {
    return this.lists.size + this.inspects.size;
  }

  /** Moves with every invalidation: answers made from the store before it may be out of date. */
  get generation(): number {
    return this.gen;
  }

  invalidate(): void {
    this.gen++;
    this.lists.clear();
    this.inspects.clear();
  }

  async listImages(query: { all?: boolean; filters?: DockerFilters; digests?: boolean }, opts?: CallOptions): Promise<ImageSummary[]> {
    opts?.signal?.throwIfAborted();
    const key = JSON.stringify([query.all === true, query.digests !== false, query.filters ?? {}]);
    const held = this.lists.get(key);
    if (held) return held;
    const generation = this.gen;
    const images = await this.docker.listImages(query, opts);
    if (generation === this.gen) keep(this.lists, key, images);
    return images;
  }

  async inspectImage(ref: string, opts?: CallOptions): Promise<ImageInspect> {
    opts?.signal?.throwIfAborted();
    const held = this.inspects.get(ref);
    if (held) {
      if (held.found) return held.image;
      throw held.error;
    }
    const generation = this.gen;
    let answer: InspectAnswer;
    try {
      answer = { found: true, image: await this.docker.inspectImage(ref, opts) };
    } catch (err) {
      if (!(err instanceof DockerNotFoundError)) throw err;
      answer = { found: false, error: err };
    }
    if (generation === this.gen) keep(this.inspects, ref, answer);
    if (answer.found) return answer.image;
    throw answer.error;
  }
}

function keep<V>(map: Map<string, V>, key: string, value: V): void {
  if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value as string);
  map.set(key, value);
}
