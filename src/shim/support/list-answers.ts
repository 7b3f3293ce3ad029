// The list answers kubelet asks for again and again on a node where nothing changed (PLEG's
// ListPodSandbox and ListContainers every second, housekeeping's every 2 s), kept while what
// they are built from stays the same: the state cache's documents and the checkpoints, whose
// versions move with each change. A call whose version matches the kept answer's gets that
// very object, and the server sends the bytes it encoded the first time (keepEncoding). While
// the cache is unsynced (lists go to Docker) nothing is kept. At 1,000 containers a list costs
// ~4 ms of CPU to build and encode, a kept one almost nothing.
import { keepEncoding } from '../../cri/contract';

/** Distinct requests kept (kubelet sends four); past it the oldest goes, whatever a client sends. */
const MAX_KEPT = 8;

interface Kept {
  version: number;
  answer: object;
}

export class ListAnswers {
  private readonly kept = new Map<string, Kept>();

  /** `version`: what the answers are built from, as one number; undefined when they must be built afresh. */
  constructor(private readonly version: () => number | undefined) {}

  /** Answers held (for tests). */
  get size(): number {
    return this.kept.size;
  }

  /**
   * Drops the answers built before the version last moved: none can be given again, and until
   * the next call of its kind a burst's large list (its objects and bytes) stayed live in an
   * idle shim. Called on each change the cache applies.
   */
  dropStale(): void {
    const version = this.version();
    for (const [key, held] of this.kept) if (held.version !== version) this.kept.delete(key);
  }

  /**
   * The answer kept for `key` (the RPC and its request) if nothing changed since it was built,
   * else `build`'s, kept for the next call. `build` must read nothing but what the version covers.
   */
  async answer<T extends object>(key: string, build: () => Promise<T>): Promise<T> {
    // Taken before building: a change while it builds leaves the answer at the older version.
    const version = this.version();
    if (version === undefined) return build();
    const held = this.kept.get(key);
    if (held?.version === version) return held.answer as T;
    const answer = await build();
    this.kept.delete(key);
    if (this.kept.size >= MAX_KEPT) this.kept.delete(this.kept.keys().next().value as string);
    this.kept.set(key, { version, answer });
    keepEncoding(answer);
    return answer;
  }
}
