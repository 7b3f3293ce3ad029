// The inspect documents of every container carrying the type label (the shim's), keyed by full ID.
// Every change goes through `refresh` or `forget`, which run one at a time per container in
// the order they were asked for; each refresh takes a fresh inspect from Docker, so whatever
// ran last for a container holds the newest truth about it.
import type { DockerClient } from '../docker/client';
import type { ContainerInspect } from '../docker/types';
import { DockerNotFoundError, errorMessage } from '../errors';
import { CONTAINER_TYPE_LABEL, hasTypeLabel } from '../conventions/labels';
import { replayEventLog, savedDocumentsHeld, type SavedContainers } from './container-snapshot';

/** Inspects at a time during a full resync: quick, without flooding dockerd. */
const RESYNC_CONCURRENCY = 8;
/** Inspects at a time confirming saved documents: the cache already answers, so gently. */
const CONFIRM_CONCURRENCY = 2;

/** One container's document before and after a refresh or removal (undefined: not held). */
export interface ContainerChange {
  id: string;
  before: ContainerInspect | undefined;
  after: ContainerInspect | undefined;
}

/**
 * Whether a change leaves the container without the process (and cgroup) it may have had: it
 * stopped, or was removed, or never ran, or it runs with a new process (a restart, seen in one
 * change). What was kept open for the old process can be let go.
 */
export function endsRun(change: ContainerChange): boolean {
  const after = change.after?.State;
  if (!after?.Running) return true;
  const before = change.before?.State;
  return before?.Running === true && before.Pid !== after.Pid;
}

/**
 * The OOM kills the cache heard of from Docker's `oom` event, by container and run. Docker's own
 * State.OOMKilled races the exit (Docker 20.10 leaves it false when the exit is handled first),
 * but the event comes either way.
 */
export interface OomKills {
  /** Whether Docker reported an OOM kill in the container's run that started at `startedAt`. */
  oomKilledIn(id: string, startedAt: string): boolean;
}

export class ContainerDocuments implements OomKills {
  private readonly docs = new Map<string, ContainerInspect>();
  /** The tail of each container's queue of changes. */
  private readonly queues = new Map<string, Promise<void>>();
  /** When each container's queue last became non-empty: its oldest change not applied yet is no older. */
  private readonly queuedSince = new Map<string, number>();
  /** Refreshes queued but not started yet: a later request can share one (see `refresh`). */
  private readonly waiting = new Map<string, Promise<void>>();
  /** Containers with an `oom` event that no refresh has taken up yet. */
  private readonly oomHeard = new Set<string>();
  /** The StartedAt of the run in which each container was OOM-killed; goes with the container. */
  private readonly oomRuns = new Map<string, string>();

  /** `onChange` hears every document stored or dropped, in the order the store applied them. */
  constructor(
    private readonly docker: DockerClient,
    private readonly onChange: (change: ContainerChange) => void = () => undefined,
  ) {}

  get size(): number {
    return this.docs.size;
  }

  /**
   * When the oldest change asked for and not applied yet (an event's re-inspect under way) was
   * asked for, in ms; undefined when none is. What is held reflects every event heard before it.
   */
  get pendingSinceMs(): number | undefined {
    let oldest: number | undefined;
    for (const since of this.queuedSince.values()) if (oldest === undefined || since < oldest) oldest = since;
    return oldest;
  }

  get(id: string): ContainerInspect | undefined {
    return this.docs.get(id);
  }

  values(): IterableIterator<ContainerInspect> {
    return this.docs.values();
  }

  /** Held, or with a change under way (a container whose create event is being handled). */
  isKnown(id: string): boolean {
    return this.docs.has(id) || this.queues.has(id);
  }

  oomKilledIn(id: string, startedAt: string): boolean {
    return this.oomRuns.get(id) === startedAt;
  }

  /**
   * Reads the container from Docker again; drops it when it is gone or not tracked. One change
   * makes several events (kill, die, stop): a refresh asked for while another is still waiting
   * to start shares it, since that one's inspect will run after both requests anyway.
   * `oomKilled`: Docker reported an OOM kill; it is counted against the run this refresh's
   * inspect shows (one that starts after the report, so not an earlier run).
   */
  refresh(id: string, { oomKilled = false }: { oomKilled?: boolean } = {}): Promise<void> {
    if (oomKilled) this.oomHeard.add(id);
    const queued = this.waiting.get(id);
    if (queued) return queued;
    const run = this.enqueue(id, async () => {
      if (this.waiting.get(id) === run) this.waiting.delete(id);
      const oomHeard = this.oomHeard.delete(id);
      let doc: ContainerInspect;
      try {
        doc = await this.docker.inspectContainer(id);
      } catch (err) {
        if (err instanceof DockerNotFoundError) {
          this.drop(id);
          return;
        }
        // The resync this failure leads to takes the report up.
        if (oomHeard) this.oomHeard.add(id);
        throw err;
      }
      if (!hasTypeLabel(doc.Config?.Labels)) {
        this.drop(doc.Id);
        return;
      }
      // Recorded before the document is announced, so the statuses built for it see it.
      if (oomHeard) this.oomRuns.set(doc.Id, doc.State.StartedAt);
      this.put(doc);
    });
    this.waiting.set(id, run);
    // A step that never starts (the store was cleared) must not leave its entry behind.
    void run.then(
      () => this.waiting.get(id) === run && this.waiting.delete(id),
      () => this.waiting.get(id) === run && this.waiting.delete(id),
    );
    return run;
  }

  /** The container was destroyed: an ID never comes back, so no need to ask Docker. */
  forget(id: string): Promise<void> {
    return this.enqueue(id, () => {
      this.drop(id);
      return Promise.resolve();
    });
  }

  private put(doc: ContainerInspect): void {
    const before = this.docs.get(doc.Id);
    this.docs.set(doc.Id, doc);
    this.onChange({ id: doc.Id, before, after: doc });
  }

  private drop(id: string): void {
    this.oomRuns.delete(id);
    const before = this.docs.get(id);
    if (!before) return;
    this.docs.delete(id);
    this.onChange({ id, before, after: undefined });
  }

  /**
   * Brings every container up to date: each tracked container Docker lists, and each held one
   * it does not (those are re-inspected, hence dropped when gone). Rejects if any step failed.
   * `saved`: what a previous run saved (container-snapshot.ts). A listed container that is not
   * held and whose saved document still holds (savedDocumentsHeld, from Docker's event log) is
   * held as saved, without an inspect; their IDs are returned, for `confirm` once the cache
   * answers, with why none could be (`cold`) when there were saved documents.
   */
  async resync(saved?: SavedContainers): Promise<{ kept: string[]; cold: string | undefined }> {
    const withSaved = saved !== undefined && saved.containers.length > 0;
    // Asked after the cache subscribed to the live events: together they miss nothing.
    const [listed, replay] = await Promise.all([
      this.docker.listContainers({ all: true, filters: { label: [CONTAINER_TYPE_LABEL] } }),
      withSaved ? replayEventLog(this.docker, Date.now()).catch((err: unknown) => `Docker's event log not read: ${errorMessage(err)}`) : [],
    ]);
    const headStart = !withSaved
      ? { held: new Set<string>(), cold: undefined }
      : typeof replay === 'string'
        ? { held: new Set<string>(), cold: replay }
        : savedDocumentsHeld(saved, replay, listed);
    const savedById = new Map((saved?.containers ?? []).map((doc) => [doc.Id, doc]));
    const kept = new Set<string>();
    const ids = new Set<string>();
    for (const entry of listed) {
      if (headStart.held.has(entry.Id) && !this.docs.has(entry.Id)) kept.add(entry.Id);
      else ids.add(entry.Id);
    }
    for (const id of this.docs.keys()) if (!kept.has(id)) ids.add(id);
    // Through each container's queue: an event's refresh asked for meanwhile is newer, and wins.
    const adopted = [...kept].map((id) =>
      this.enqueue(id, async () => {
        if (!this.docs.has(id)) this.put(savedById.get(id)!);
      }),
    );
    await Promise.all([...adopted, this.refreshAll(ids, RESYNC_CONCURRENCY)]);
    return { kept: [...kept], cold: headStart.cold };
  }

  /** Inspects again the containers held from saved documents (see resync). Rejects if any failed. */
  confirm(ids: Iterable<string>): Promise<void> {
    return this.refreshAll(ids, CONFIRM_CONCURRENCY);
  }

  private async refreshAll(ids: Iterable<string>, concurrency: number): Promise<void> {
    const pending = [...ids];
    const worker = async (): Promise<void> => {
      for (let id = pending.pop(); id !== undefined; id = pending.pop()) await this.refresh(id);
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, pending.length) }, worker));
  }

  clear(): void {
    this.docs.clear();
    this.waiting.clear();
    this.oomHeard.clear();
    this.oomRuns.clear();
  }

  private enqueue(id: string, step: () => Promise<void>): Promise<void> {
    if (!this.queues.has(id)) this.queuedSince.set(id, Date.now());
    const previous = this.queues.get(id) ?? Promise.resolve();
    const run = previous.then(step);
    // The queue continues whether this step failed or not; the caller sees its own failure.
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(id, tail);
    void tail.then(() => {
      if (this.queues.get(id) !== tail) return;
      this.queues.delete(id);
      this.queuedSince.delete(id);
    });
    return run;
  }
}
