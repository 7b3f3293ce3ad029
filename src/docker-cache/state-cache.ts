// Keeps the container and image stores in step with Docker through its event stream.
// Each (re)connection subscribes first, then reads everything again (a full resync), while
// the events that arrive meanwhile are applied as they come; only then is the cache "synced".
// A stream that fails or ends, or a re-inspect that fails, makes it unsynced at once (reads go
// to Docker) and starts over after a bounded backoff, so a restarted daemon heals by itself.
// With a snapshot file, what the cache holds is saved now and then and at a stop, and the
// first sync of the next run starts from it (./container-snapshot.ts).
import type { DockerClient } from '../docker/client';
import type { DockerEvent } from '../docker/types';
import { errorMessage } from '../errors';
import { abortable } from '../util/abortable';
import type { Logger } from '../util/logger';
import { ContainerDocuments, endsRun, type ContainerChange } from './container-documents';
import { actionForEvent, EVENT_FILTERS } from './docker-events';
import type { ContainerSnapshotFile, SavedContainers } from './container-snapshot';
import { ImageAnswers } from './image-answers';

/** The image reads the cache answers in Docker's place. */
type ImageReads = Pick<DockerClient, 'listImages' | 'inspectImage'>;

interface ReconnectBackoff {
  initialMs: number;
  maxMs: number;
  /** How long Docker may take to accept the subscription before the attempt is given up. */
  subscribeTimeoutMs: number;
}

/**
 * What a consumer hears of the state cache: the one way to listen (`listen`), each part as
 * the consumer needs it. Without `unsynced` it hears for as long as the cache runs, synced or
 * resyncing. With `unsynced` it is a watch of the synced cache: refused while unsynced, it hears
 * `containerChanged` only while synced, and `unsynced` once when the cache stops vouching for
 * its contents, then nothing more (a watcher that wants more listens again once synced).
 */
interface StateListener {
  /** A container's document was stored or dropped; called in the order the cache applied them. */
  containerChanged?(change: ContainerChange): void;
  /**
   * A container the cache sees stop, be removed or restart (see `endsRun`), synced or not (a
   * resync drops what was removed meanwhile): what is held open for its process is closed then,
   * not at some later read.
   */
  runEnded?(id: string): void;
  /** A snapshot was saved (the text of every document held, made and dropped: garbage to collect). */
  snapshotSaved?(): void;
  /** The cache stopped vouching for its contents (Docker lost, or shut down): it said its last. */
  unsynced?(reason: string): void;
}

/**
 * The state cache as its consumers see it: what they read of it, and one way to listen. Only
 * the caching client and the object store, which answer reads from it, hold the cache itself.
 */
export interface ContainerState {
  /** True while every event since the last full resync has been applied. */
  readonly synced: boolean;
  /** Moves with every change the cache applies; undefined while unsynced (see DockerStateCache.version). */
  readonly version: number | undefined;
  readonly containers: Pick<ContainerDocuments, 'get' | 'values' | 'size' | 'oomKilledIn'>;
  readonly images: Pick<ImageAnswers, 'size'>;
  /** Whether the cache holds the container as running (as last heard, while unsynced too). */
  isRunning(id: string): boolean;
  /** Hears what `listener` asks for (see StateListener); returns the unlisten. Throws for a watch while unsynced. */
  listen(listener: StateListener): () => void;
}

/**
 * How long the cache waits, after one of the shim's own calls, for the event Docker announces
 * it with before it inspects the container itself (see `expectEvent`). Docker sends the event
 * before its answer, so it is normally here already, or within milliseconds.
 */
export const OWN_EVENT_WAIT_MS = 200;

/**
 * The longest a read waits for the shim's own changes to be applied (see `caughtUp`): a
 * container Docker is slow to inspect must not hold up the reads of every other pod. Past it
 * the read goes to Docker, as while unsynced: what the cache holds may still lack a container
 * the shim made a moment ago (which a StopPodSandbox must not leave running, nor a
 * StartContainer answer NOT_FOUND for), or show one as it was before the shim's last call.
 */
export const CATCH_UP_WAIT_MS = 2_000;

/** One of the shim's own calls, waiting for Docker's event about it (see `expectEvent`). */
interface AwaitedEvent {
  readonly action: string;
  /** The container's full ID, or its name (a create's ID is known only from the answer). */
  readonly id?: string;
  readonly name?: string;
  /** The container the event was about, and the refresh it set off, once heard. */
  heard?: { id: string; refresh: Promise<void> };
  onHeard?: () => void;
}

/** What the caching client tells the cache once Docker answered the call `expectEvent` was for. */
interface ExpectedEvent {
  /** `id`: the container (undefined: none was made); `ok`: whether Docker said it did the work. */
  settle(id: string | undefined, ok: boolean): void;
}

export const DEFAULT_RECONNECT_BACKOFF: ReconnectBackoff = { initialMs: 100, maxMs: 2_000, subscribeTimeoutMs: 10_000 };

/** Told each time the cache follows Docker's event stream anew after losing it (for metrics). */
export interface StateCacheRecorder {
  reconnecting(): void;
}

const NO_STATE_CACHE_RECORDER: StateCacheRecorder = { reconnecting: () => undefined };

/** How long after a container changed the snapshot is saved (and once more at a stop): nothing is armed while nothing changes. */
export const SNAPSHOT_INTERVAL_MS = 60_000;

export class DockerStateCache implements ContainerState {
  readonly containers: ContainerDocuments;
  readonly images: ImageAnswers;
  private isSynced = false;
  /** Events read from Docker, to be applied after the current poll turn (see `consume`). */
  private unapplied: DockerEvent[] = [];
  private stopped = false;
  private stream: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private readonly stopSignal = new AbortController();
  /** In the order they came: each hears in that order. */
  private readonly listeners = new Set<StateListener>();
  /** The snapshot, for the first sync only (later ones start from what is held). */
  private saved: SavedContainers | undefined;
  /** Containers changed since the snapshot was last saved. */
  private changedSinceSave = false;
  private saveTimer: NodeJS.Timeout | undefined;
  /** Container documents stored or dropped, and losses of sync, so far (see `version`). */
  private containerChanges = 0;
  private unsyncs = 0;
  /** Changes the shim's own calls made that are not applied yet (see `track`). */
  private readonly ownChanges = new Set<Promise<void>>();
  /** The shim's own calls waiting for Docker's event about them. */
  private readonly awaited = new Set<AwaitedEvent>();

  constructor(
    private readonly docker: DockerClient,
    private readonly log: Logger,
    private readonly backoff: ReconnectBackoff = DEFAULT_RECONNECT_BACKOFF,
    private readonly recorder: StateCacheRecorder = NO_STATE_CACHE_RECORDER,
    private readonly snapshot?: ContainerSnapshotFile,
  ) {
    this.containers = new ContainerDocuments(docker, (change) => this.announce(change));
    this.images = new ImageAnswers(docker);
  }

  /** True while every event since the last full resync has been applied. */
  get synced(): boolean {
    return this.isSynced && !this.stopped;
  }

  /**
   * Moves with every container document stored or dropped, every image change and every loss
   * of sync; undefined while unsynced. What is built from the cache alone is the same for as
   * long as the version is (../shim/support/list-answers.ts keeps such answers).
   */
  get version(): number | undefined {
    // While one of the shim's own changes is being applied, nothing built before it may be kept.
    return this.synced && this.ownChanges.size === 0 ? this.containerChanges + this.images.generation + this.unsyncs : undefined;
  }

  /**
   * A refresh or forget after one of the shim's own calls, which that call's caller does not
   * wait for (the caching client answers it as soon as Docker did): `caughtUp` lets every read
   * after it wait instead, and `version` is undefined until it is applied.
   */
  track(change: Promise<void>): void {
    this.ownChanges.add(change);
    const applied = (): void => void this.ownChanges.delete(change);
    change.then(applied, applied);
  }

  /**
   * For one of the shim's own calls that Docker announces with an `action` event before it
   * answers (a create, a start, a stop of a running container): asked before the call is sent
   * (an event heard earlier may be an older one), settled once Docker answered. The refresh that
   * event sets off is the one the call needs, since its inspect starts after the event came, so
   * after the call took effect: an inspect of the shim's own would read the same document again.
   * A call that failed, an event not heard within OWN_EVENT_WAIT_MS (Docker had nothing to do),
   * or a cache not synced: the cache inspects the container itself. Either way it is tracked.
   */
  expectEvent(action: string, target: { id: string } | { name: string }): ExpectedEvent {
    const entry: AwaitedEvent = { action, ...target };
    this.awaited.add(entry);
    return {
      settle: (id, ok) => {
        if (id === undefined) this.awaited.delete(entry);
        else this.track(ok ? this.afterEvent(entry, id) : this.ownRefresh(entry, id));
      },
    };
  }

  private ownRefresh(entry: AwaitedEvent, id: string): Promise<void> {
    this.awaited.delete(entry);
    return this.refreshContainer(id);
  }

  private afterEvent(entry: AwaitedEvent, id: string): Promise<void> {
    const refreshOf = (heard: { id: string; refresh: Promise<void> }): Promise<void> => {
      this.awaited.delete(entry);
      return heard.id === id ? heard.refresh : this.refreshContainer(id);
    };
    if (entry.heard) return refreshOf(entry.heard);
    if (!this.synced) return this.ownRefresh(entry, id);
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => resolve(this.ownRefresh(entry, id)), OWN_EVENT_WAIT_MS);
      entry.onHeard = () => {
        clearTimeout(timer);
        resolve(refreshOf(entry.heard!));
      };
    });
  }

  /** Tells the calls waiting for this event (see `expectEvent`) of the refresh it set off. */
  private heard(ev: DockerEvent, id: string, refresh: Promise<void>): void {
    for (const entry of this.awaited) {
      if (entry.heard || entry.action !== ev.Action) continue;
      if (entry.id !== id && (entry.name === undefined || ev.Actor?.Attributes?.name !== entry.name)) continue;
      entry.heard = { id, refresh };
      entry.onHeard?.();
    }
  }

  /**
   * Whether the cache may answer a read now: true once every change tracked so far is applied
   * with the cache synced; false while unsynced, when it went unsynced meanwhile (a failed
   * refresh desyncs it), or after CATCH_UP_WAIT_MS (a change still pending): the read then
   * goes to Docker. At once when none is pending. The caller's signal ends the wait.
   */
  async caughtUp(signal?: AbortSignal): Promise<boolean> {
    if (!this.synced) return false;
    if (this.ownChanges.size === 0) return true;
    // A tracked change never rejects: a failed refresh desyncs the cache instead.
    const applied = Promise.all(this.ownChanges).then(() => true);
    let timer: NodeJS.Timeout | undefined;
    const waitedLongEnough = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), CATCH_UP_WAIT_MS)));
    try {
      return (await abortable(Promise.race([applied, waitedLongEnough]), signal)) && this.synced;
    } finally {
      clearTimeout(timer);
    }
  }

  // --- Where a read is answered: the one place the shim chooses between the cache and Docker
  // (the caching client and the object store both ask here). ---

  /** Image lists and inspects: the cache's answers while it is synced, else `docker`'s own. */
  imagesOr(docker: ImageReads): ImageReads {
    return this.synced ? this.images : docker;
  }

  /**
   * The container documents to read once the shim's own changes are applied (see `caughtUp`);
   * undefined: the read goes to Docker.
   */
  async heldContainers(signal?: AbortSignal): Promise<ContainerDocuments | undefined> {
    return (await this.caughtUp(signal)) ? this.containers : undefined;
  }

  /**
   * The container documents as held now, without waiting for the shim's own changes still being
   * applied (only a container's state can be behind on them); undefined while unsynced.
   */
  get containersNow(): ContainerDocuments | undefined {
    return this.synced ? this.containers : undefined;
  }

  /** Whether a snapshot save is armed (one is only while a change waits to be saved). */
  get snapshotSaveArmed(): boolean {
    return this.saveTimer !== undefined;
  }

  /** Starts following Docker; resolves once the first sync succeeded or failed (it keeps trying). */
  start(): Promise<void> {
    if (this.loop) throw new Error('state cache already started');
    this.saved = this.snapshot?.load();
    return new Promise<void>((resolve) => {
      this.loop = this.run(resolve);
    });
  }

  listen(listener: StateListener): () => void {
    if (listener.unsynced && !this.synced) throw new Error('state cache is not synced with Docker');
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {
    clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    // Saved even when unchanged: a later save time is one Docker's event log covers more often.
    await this.save(true);
    // A save refused or failed just now re-armed it.
    clearTimeout(this.saveTimer);
    this.stopped = true;
    this.markUnsynced('the shim is stopping');
    this.stopSignal.abort();
    this.stream?.abort();
    await this.loop;
  }

  /** One save SNAPSHOT_INTERVAL_MS from now, unless one is due already (or the cache is stopping). */
  private saveLater(): void {
    if (!this.snapshot || this.saveTimer || this.stopped) return;
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined;
      void this.save();
    }, SNAPSHOT_INTERVAL_MS);
    this.saveTimer.unref();
  }

  /** Saves what the cache holds, if it changed (or `always`) and the cache vouches for it (unsynced: tried again later). */
  private async save(always = false): Promise<void> {
    if (!this.snapshot || !(this.changedSinceSave || always)) return;
    if (!this.synced) return this.saveLater();
    this.changedSinceSave = false;
    const started = Date.now();
    // A change under way (an event's re-inspect) is not in the documents yet: they stand as of
    // when it was asked for, so the next run (container-snapshot.ts) takes its event for newer.
    const savedAtMs = Math.min(started, this.containers.pendingSinceMs ?? started);
    try {
      await this.snapshot.save(this.containers.values(), new Date(savedAtMs));
      this.log.debug({ containers: this.containers.size, ms: Date.now() - started }, 'container snapshot saved');
      for (const listener of this.listeners) listener.snapshotSaved?.();
    } catch (err) {
      this.changedSinceSave = true;
      this.saveLater();
      this.log.warn({ file: this.snapshot.file, err: errorMessage(err) }, 'container snapshot not saved; the next start inspects every container');
    }
  }

  /** The cache may have missed something: stop answering from it and resync. */
  desync(reason: string): void {
    if (this.isSynced) this.log.warn({ reason }, 'state cache out of step with Docker; resyncing');
    this.markUnsynced(reason);
    this.stream?.abort();
  }

  /** Whether the cache holds the container as running (as last heard, while unsynced too). */
  isRunning(id: string): boolean {
    return this.containers.get(id)?.State.Running === true;
  }

  /** Docker removed the container (our own call said so): drop it without asking again. */
  forgetContainer(id: string): Promise<void> {
    return this.containers.forget(id);
  }

  /** Reads a container again; if that fails the cache cannot vouch for it, so it resyncs. */
  async refreshContainer(id: string, opts: { oomKilled?: boolean } = {}): Promise<void> {
    try {
      await this.containers.refresh(id, opts);
    } catch (err) {
      this.desync(`re-inspecting container ${id}: ${errorMessage(err)}`);
    }
  }

  private markUnsynced(reason: string): void {
    this.isSynced = false;
    this.unsyncs++;
    const watches = [...this.listeners].filter((l) => l.unsynced);
    for (const w of watches) this.listeners.delete(w);
    for (const w of watches) w.unsynced!(reason);
  }

  private announce(change: ContainerChange): void {
    this.changedSinceSave = true;
    this.saveLater();
    this.containerChanges++;
    const listeners = [...this.listeners];
    if (endsRun(change)) for (const l of listeners) l.runEnded?.(change.id);
    for (const l of listeners) if (!l.unsynced) l.containerChanged?.(change);
    // The watches last; changes applied during a resync reach none: none is kept while unsynced.
    for (const l of listeners) if (l.unsynced) l.containerChanged?.(change);
  }

  private async run(firstAttemptDone: () => void): Promise<void> {
    let failures = 0;
    for (let attempt = 0; !this.stopped; attempt++) {
      if (attempt > 0) this.recorder.reconnecting();
      const stream = new AbortController();
      this.stream = stream;
      let reason = 'Docker closed the event stream';
      try {
        await this.follow(stream, () => {
          failures = 0;
          firstAttemptDone();
        });
      } catch (err) {
        reason = errorMessage(err);
      }
      stream.abort();
      this.markUnsynced(reason);
      this.images.invalidate();
      firstAttemptDone();
      if (this.stopped) break;
      const delayMs = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** failures);
      failures++;
      // One warning per outage; the retries while Docker stays away are debug noise.
      const level = failures === 1 ? 'warn' : 'debug';
      this.log[level]({ reason, retryInMs: delayMs }, 'no Docker event stream; reads go to Docker until resynced');
      await sleep(delayMs, this.stopSignal.signal);
    }
  }

  /** One connection: subscribe, resync, then apply events until the stream ends. */
  private async follow(stream: AbortController, onSynced: () => void): Promise<void> {
    const signal = stream.signal;
    let subscribed = false;
    let onSubscribed: () => void = () => undefined;
    const subscription = new Promise<void>((resolve) => (onSubscribed = resolve));
    const events = this.docker.events({ filters: EVENT_FILTERS }, { signal, onSubscribed: () => ((subscribed = true), onSubscribed()) });
    const consumed = this.consume(events);
    consumed.catch(() => undefined);
    const giveUp = setTimeout(() => stream.abort(), this.backoff.subscribeTimeoutMs);
    try {
      await Promise.race([subscription, consumed]);
    } finally {
      clearTimeout(giveUp);
    }
    if (!subscribed) throw new Error('Docker did not accept the event subscription');

    this.images.invalidate();
    const started = Date.now();
    // A stop or a lost stream does not wait for the resync's last inspects: they are applied
    // when they come (one container's changes stay in order), and the next connection resyncs.
    // The first sync now runs while the shim already answers, so a SIGTERM can come mid-way.
    const saved = this.saved;
    this.saved = undefined;
    const resync = this.containers.resync(saved);
    resync.catch(() => undefined);
    await Promise.race([resync, aborted(signal)]);
    if (signal.aborted) return consumed;
    const { kept: fromSnapshot, cold } = await resync;
    this.isSynced = true;
    if (cold !== undefined) this.log.info({ file: this.snapshot?.file, reason: cold }, 'container snapshot not used; every container inspected');
    this.log.info({ containers: this.containers.size, fromSnapshot: fromSnapshot.length, ms: Date.now() - started }, 'state cache synced with Docker');
    onSynced();
    // What a list cannot show of a saved document (a resource update, say) is read now.
    if (fromSnapshot.length > 0) {
      this.containers.confirm(fromSnapshot).then(
        () => this.log.debug({ containers: fromSnapshot.length, ms: Date.now() - started }, 'containers from the snapshot inspected again'),
        (err: unknown) => this.desync(`inspecting again the containers from the snapshot: ${errorMessage(err)}`),
      );
    }
    return consumed;
  }

  /**
   * Events are applied once the poll turn that read them is over, in the order they came. Docker
   * sends the event of a change just before its answer to the call that made it, so both are
   * often read in one turn: applied at once, the event's refresh (an inspect request, the
   * cache's bookkeeping) would run before that call's gRPC answer is written; applied after the
   * turn, it follows the answer's message out (grpc-js writes the trailers a turn later still).
   */
  private async consume(events: AsyncIterable<DockerEvent>): Promise<void> {
    for await (const ev of events) {
      if (this.unapplied.push(ev) === 1) setImmediate(() => this.applyUnapplied());
    }
  }

  private applyUnapplied(): void {
    const events = this.unapplied;
    this.unapplied = [];
    for (const ev of events) this.apply(ev);
  }

  private apply(ev: DockerEvent): void {
    const action = actionForEvent(ev, (id) => this.containers.isKnown(id));
    switch (action.kind) {
      case 'refresh':
        this.heard(ev, action.id, this.refreshContainer(action.id));
        return;
      case 'oom':
        void this.refreshContainer(action.id, { oomKilled: true });
        return;
      case 'forget':
        void this.containers.forget(action.id);
        return;
      case 'images-changed':
        this.images.invalidate();
        return;
      case 'ignore':
        return;
    }
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
