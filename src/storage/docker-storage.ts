// The disk Docker's storage takes, kept fresh in the background so that ImageFsInfo, the stats
// and the metrics answer from memory: no call walks a tree, whatever the size of the store.
//
// A pass runs at start, CHANGE_PASS_DELAY_MS after a container changed (Docker's events, through
// the state cache: a burst of changes is one pass, and no more than one per REFRESH_MS), and when
// a call asks for a figure and the last pass began REFRESH_MS ago or more (an image may have come
// or gone, running containers may have written), or the container asked about is not known yet. The call answers from memory at once, with each figure's time; the
// pass it asked for brings the next answer up to date. So the figures follow the changes and the
// calls (kubelet asks every 10-15 s), and a shim where nothing changes and nobody asks runs no
// pass at all: no walk, no cgroup read, no request to Docker.
//
// A pass first reconciles, from the state cache and small files only:
// - the images: each new image ID is inspected once (an ID names fixed content) for its layers'
//   chain IDs; each new chain ID's record is read once from Docker's layer database (its size
//   by Docker's own count, and its directory). Shared layers are one chain ID, counted once.
// - the shim's containers: each one's writable layer directory (and its "-init" layer), and
//   whether it runs.
// The parts: where the store keeps what is measured (./layer-locations.ts), when passes run
// (./pass-schedule.ts), the CPU witness (./cpu-witness.ts), the saved figures (./saved-figures.ts).
// Nothing is reconciled while the state cache's version stands (no container or image changed).
// Then it measures, one directory tree at a time, what is due (the walks of both lanes below
// share one pace: together they take WALK_SHARE of one core):
// - an image layer once, in a lane of its own (a walker going through the new layers one after
//   another), so that a large layer's walk never holds the passes back: layers never change
//   (content-addressed; Docker makes a new one for new content), so a layer measured is never
//   measured again, nor after a restart (its figure is saved, ./layer-figures-file.ts);
// - a container's writable layer when it was never measured, when it stopped or started since
//   it was measured, or when it runs, its figure is older than RUNNING_LAYER_MAX_AGE_MS and its
//   processes used CPU since (./cpu-witness.ts: a container whose CPU time did not move wrote
//   nothing, and its figure is confirmed as of now without a walk). A container that does not run
//   has no process at all. What this misses until the container next runs: a write from outside
//   its cgroup (`docker cp`, a process of the host writing into the layer's directory).
//   Its init layer (Docker's mount points and empty /etc files, made at create) never
//   changes, and is measured once.
// - Docker's image metadata (<root>/image) and the layers' short links (<storage>/l) when the
//   set of images or of containers changed (each container has its entry in the layer database
//   and a link for each of its two layers there).
// Until an image layer is measured its bytes are Docker's count and its inodes unknown (0).
//
// On Docker's containerd image store (./snapshot-layers.ts) there is no layer database: the
// layers are the snapshots of containerd's snapshotter, numbered directories found by listing
// them, and the images' blobs are in containerd's content store. A snapshot is measured once,
// as an image layer, unless it is a shim container's writable layer (found in the container's
// root mount while it runs, and kept: it is the same snapshot when it stops or starts again),
// which is measured as above. What this store counts with the images: the containers' init
// snapshots (Docker's mount points, never written to after create), the layers of containers
// that are not the shim's, and a shim container's layer until it first runs (empty until then);
// the content store, containerd's metadata and the snapshotter's take the place of Docker's
// image metadata.
import type { DockerClient } from '../docker/client';
import type { ImageStoreLayout } from '../docker/documents';
import type { ObjectFinder } from '../object-store/object-store';
import { DockerNotFoundError, errorMessage, UnimplementedError } from '../errors';
import { RequestDeadline } from '../util/request-deadline';
import { diskUsage, dutyCyclePace, type DiskUsage, type WalkOptions } from '../util/disk-usage';
import type { Logger } from '../util/logger';
import { abortable } from '../util/abortable';
import type { CgroupOwner, CgroupReader } from '../cgroups/reader';
import { CpuWitness } from './cpu-witness';
import { chainIds } from './image-layers';
import type { LayerFiguresFile } from './layer-figures-file';
import type { ImageLayerState, Measured } from './measured';
import { PassSchedule } from './pass-schedule';
import { SavedLayerFigures } from './saved-figures';
import { containerSnapshotDir } from './snapshot-layers';
import { LayerLocations } from './layer-locations';

/** A call this long after the last pass began asks for another (the running containers' layers). */
const REFRESH_MS = 10_000;
/**
 * How long a pass's requests to Docker may take: a request that does not come back (a container
 * whose lock a stuck removal holds, a dead connection) must not hold every later pass.
 */
const RECONCILE_TIMEOUT_MS = 10_000;
const RUNNING_LAYER_MAX_AGE_MS = 10_000;
/** How long after a container changed the pass that finds it runs (the changes meanwhile join it). */
const CHANGE_PASS_DELAY_MS = 1_000;
/** The share of one core the walks may take. */
const WALK_SHARE = 0.25;
/** A walk of the image layers this long (entries) is told of when it ends (onLayerWalkEnded). */
const LONG_WALK_ENTRIES = 10_000;


interface ImageFsFigures {
  /** <DockerRootDir>/<driver>, or containerd's snapshotter directory: the filesystem both figures are on. */
  mountpoint: string;
  images: Measured;
  containers: Measured;
}

interface ContainerLayer {
  /**
   * The writable layer's directory (<storage>/<layer>: diff, work, link, lower; or a snapshot's:
   * fs, work), and its init layer's (none on the containerd store, where it counts with the images).
   * No directory: a stopped container on the containerd store whose snapshot the shim never saw
   * (it stopped before a pass found it running): Docker's count of its bytes stands, asked once.
   */
  dir: string | undefined;
  initDir: string | undefined;
  /** Its init process, to find its cgroup. */
  owner: CgroupOwner;
  running: boolean;
  /** When it last started or stopped (ms); Infinity while it runs. */
  changedAtMs: number;
  /** The layer's figure, with the init layer's added. */
  measured: Measured | undefined;
  /** The init layer's own figure (measured once: nothing writes to it after create). */
  init: DiskUsage | undefined;
  /** The container's CPU time when `measured` was taken or last confirmed. */
  cpuNs: bigint | undefined;
}

interface DockerStorageOptions {
  refreshMs?: number;
  changePassDelayMs?: number;
  runningLayerMaxAgeMs?: number;
  reconcileTimeoutMs?: number;
  walkShare?: number;
  longWalkEntries?: number;
  walk?: (roots: readonly string[], opts: WalkOptions) => Promise<DiskUsage>;
  now?: () => number;
  /** Where the image layers' figures are kept across restarts; none: measured again by each run. */
  layerFigures?: LayerFiguresFile;
  /** The image store (../docker/documents.ts imageStoreOf); default: the graph driver's, <root>/<driver>. */
  layout?: ImageStoreLayout;
  /** A running container's snapshot directory on the containerd store. */
  snapshotDirOf?: (pid: number, snapshotter: string) => string | undefined;
}

export class DockerStorage {
  readonly mountpoint: string;
  /** Every walk so far, and the entries they visited: what a call must never add to. */
  readonly walked = { trees: 0, entries: 0 };
  /** The state cache's version at the last reconciling (nothing changed since while it stands). */
  private reconciledAt: number | undefined;
  private readonly images = new Map<string, { chains: string[]; dockerSize: number }>();
  private readonly imageLayers = new Map<string, ImageLayerState>();
  private readonly containers = new Map<string, ContainerLayer>();
  private metadata: Measured | undefined;
  private metadataStale = true;
  private imagesAtMs = 0;
  /** When the last pass began. */
  private passStartedAtMs = -Infinity;
  /** The pass a container's change asked for, until it runs. */
  private changeTimer: NodeJS.Timeout | undefined;
  private loggedFallback = false;
  /** The image layers' walker, while it has layers to measure. */
  private layerWalking: Promise<void> | undefined;
  /** One pace for every walk, so the two lanes together keep to the share. */
  private readonly pace: () => Promise<void> | void;
  private readonly reconciled: Promise<void>;
  private markReconciled: () => void = () => undefined;
  private readonly opts: Required<Omit<DockerStorageOptions, 'layerFigures' | 'layout' | 'snapshotDirOf'>>;
  private readonly store: LayerLocations;
  private readonly schedule: PassSchedule;
  private readonly witness: CpuWitness;
  private readonly savedFigures: SavedLayerFigures;
  private readonly passListeners = new Set<() => void>();
  private readonly layerWalkListeners = new Set<() => void>();

  constructor(
    private readonly deps: {
      readonly docker: DockerClient;
      /** The shim's containers (../object-store). */
      readonly objects: ObjectFinder;
      readonly log: Logger;
      readonly cgroupReader: Pick<CgroupReader, 'cpuUsage'>;
      /** The state cache's version (undefined while unsynced): while it stands, the images and containers are as last reconciled. */
      readonly stateVersion: () => number | undefined;
    },
    root: string,
    driver: string,
    opts: DockerStorageOptions = {},
  ) {
    this.store = new LayerLocations(root, driver, opts.layout, opts.snapshotDirOf ?? containerSnapshotDir);
    this.mountpoint = this.store.mountpoint;
    this.opts = {
      refreshMs: opts.refreshMs ?? REFRESH_MS,
      changePassDelayMs: opts.changePassDelayMs ?? CHANGE_PASS_DELAY_MS,
      runningLayerMaxAgeMs: opts.runningLayerMaxAgeMs ?? RUNNING_LAYER_MAX_AGE_MS,
      reconcileTimeoutMs: opts.reconcileTimeoutMs ?? RECONCILE_TIMEOUT_MS,
      walkShare: opts.walkShare ?? WALK_SHARE,
      longWalkEntries: opts.longWalkEntries ?? LONG_WALK_ENTRIES,
      walk: opts.walk ?? diskUsage,
      now: opts.now ?? Date.now,
    };
    this.schedule = new PassSchedule(async (signal) => {
      try {
        await this.pass(signal);
      } finally {
        for (const listener of this.passListeners) listener();
      }
    }, deps.log);
    this.witness = new CpuWitness(deps.cgroupReader);
    this.savedFigures = new SavedLayerFigures(opts.layerFigures, root, driver, deps.log, this.opts.now);
    this.reconciled = new Promise((resolve) => (this.markReconciled = resolve));
    this.pace = dutyCyclePace(this.opts.walkShare);
  }

  /** Running containers' figures confirmed without a walk so far (their CPU time had not moved). */
  get confirmed(): number {
    return this.witness.confirmed;
  }

  /** Starts the passes: one now, then as calls find figures due. */
  start(): void {
    if (!this.store.known) return;
    // Saved figures are a graph driver's layers' (by chain ID and cache-id).
    if (!this.store.onContainerd) this.savedFigures.load();
    this.schedule.start();
  }

  /** Hears of each pass ended (its walks' and inspects' results, made and dropped: garbage to collect). Returns the unlisten. */
  onPassEnded(listener: () => void): () => void {
    this.passListeners.add(listener);
    return () => this.passListeners.delete(listener);
  }

  /**
   * Hears of each walk of the image layers ended that read LONG_WALK_ENTRIES or more while it
   * ran: on a fresh root directory minutes of directory reads (at WALK_SHARE of a core), whose
   * end no pass and no call follows; all it made is garbage then. Returns the unlisten.
   */
  onLayerWalkEnded(listener: () => void): () => void {
    this.layerWalkListeners.add(listener);
    return () => this.layerWalkListeners.delete(listener);
  }

  /** Stops the passes and any walk under way. */
  close(): void {
    clearTimeout(this.changeTimer);
    this.schedule.close();
  }

  /** A container came, went, started or stopped: a pass CHANGE_PASS_DELAY_MS from now, unless one is armed. */
  containerChanged(): void {
    if (this.changeTimer || this.schedule.signal.aborted) return;
    // Under churn (containers changing every second) no more than one pass per refreshMs: each
    // may walk the image metadata, and the walks share one pace with the image layers'.
    const delay = Math.max(this.opts.changePassDelayMs, this.passStartedAtMs + this.opts.refreshMs - this.opts.now());
    this.changeTimer = setTimeout(() => {
      this.changeTimer = undefined;
      this.requestPass();
    }, delay);
    this.changeTimer.unref();
  }

  /**
   * ImageFsInfo's figures, from memory (a pass asked for when they are due). Only the first call
   * after start-up waits, for the first reconciling (lists and small files, no walk), or until
   * `signal` gives up.
   */
  async imageFs(signal: AbortSignal): Promise<ImageFsFigures> {
    if (!this.store.known) throw new UnimplementedError('ImageFsInfo: Docker did not report its root directory and storage driver');
    await abortable(this.reconciled, signal);
    this.refreshIfDue();
    return { mountpoint: this.mountpoint, images: this.imageFigures(), containers: this.containerFigures() };
  }

  /** A container's writable layer as last measured (a pass asked for when due); undefined (and a pass asked for) before the first measurement. */
  writableLayer(id: string): Measured | undefined {
    const measured = this.containers.get(id)?.measured;
    if (!measured) this.requestPass();
    else this.refreshIfDue();
    return measured;
  }

  /** The writable layer directory of a container as last reconciled (its files are under `diff` or `fs`); undefined (and a pass asked for) before it was reconciled. */
  layerDir(id: string): string | undefined {
    const known = this.containers.get(id);
    if (!known) this.requestPass();
    return known?.dir;
  }

  /** Resolves once no pass or layer walk is under way or asked for (every figure due has been measured). */
  async settled(): Promise<void> {
    while (this.schedule.running || this.layerWalking) await Promise.all([this.schedule.running, this.layerWalking]);
  }

  /** Runs a pass now, or right after the one under way. */
  requestPass(): void {
    this.schedule.request();
  }

  /**
   * Asks for a pass when the last one began refreshMs ago or more (one that reconciles when the
   * state moved since): calls polling every 250 ms on a node whose containers change every second
   * bring one pass per refreshMs, not one per call.
   */
  private refreshIfDue(): void {
    if (this.opts.now() - this.passStartedAtMs >= this.opts.refreshMs) this.requestPass();
  }

  /** The writable layer directories of the shim's containers known so far. */
  private containerDirs(): Set<string> {
    return new Set([...this.containers.values()].flatMap((c) => (c.dir === undefined ? [] : [c.dir])));
  }

  private async pass(signal: AbortSignal): Promise<void> {
    const started = this.opts.now();
    this.passStartedAtMs = started;
    const trees = this.walked.trees;
    const confirmed = this.witness.confirmed;
    // A deadline whose timer ends with the reconcile: AbortSignal.timeout's would wake the shim
    // once more, reconcileTimeoutMs after every pass.
    const asking = new RequestDeadline(this.opts.reconcileTimeoutMs, signal);
    // Taken first: a change while reconciling makes the next pass reconcile again.
    const version = this.deps.stateVersion();
    try {
      if (version === undefined || version !== this.reconciledAt) {
        await this.reconcileImages(asking.signal!);
        await this.reconcileContainers(asking.signal!);
        this.reconciledAt = version;
      } else {
        // No image came or went since: the images' figure stands as of now.
        this.imagesAtMs = this.opts.now();
      }
    } catch (err) {
      if (!signal.aborted && asking.timedOut) throw new Error(`Docker did not answer the pass's requests within ${this.opts.reconcileTimeoutMs} ms`);
      throw err;
    } finally {
      asking.end();
      // A failed first reconcile must not hold ImageFsInfo: it answers with what is known.
      this.markReconciled();
    }
    const reconciled = this.opts.now();
    this.walkImageLayers();
    await this.measureDueContainers(signal);
    if (this.metadataStale) {
      this.metadataStale = false;
      this.metadata = await this.measure(this.store.metadataDirs(), signal);
    }
    this.deps.log.debug(
      { images: this.images.size, containers: this.containers.size, reconcileMs: reconciled - started, passMs: this.opts.now() - started, walks: this.walked.trees - trees, confirmed: this.witness.confirmed - confirmed },
      'storage figures: a pass',
    );
  }

  /** Starts the walker over the image layers not measured yet, unless it runs. */
  private walkImageLayers(): void {
    const signal = this.schedule.signal;
    if (this.layerWalking || signal.aborted) return;
    // Only a long walk is worth telling: a pass with no layer to measure starts a walker that ends
    // at once, and on a node that pulls images often each one's few layers are a small walk.
    const entriesAtStart = this.walked.entries;
    const walking = (async () => {
      for (;;) {
        const containerDirs = this.containerDirs();
        const next = [...this.imageLayers.values()].find((state) => !state.measured && state.layer && !containerDirs.has(state.layer.dir));
        if (!next) return this.savedFigures.save(this.imageLayers);
        // A layer removed meanwhile keeps its figure on a state nobody holds any more.
        next.measured = await this.measure([next.layer!.dir], signal);
        this.savedFigures.markChanged();
        // A long first walk (minutes on a large store) keeps what it did if the shim stops.
        if (this.savedFigures.due()) await this.savedFigures.save(this.imageLayers);
      }
    })();
    this.layerWalking = walking
      .catch((err: unknown) => {
        if (!signal.aborted) this.deps.log.warn({ err: errorMessage(err) }, 'storage figures: an image layer walk failed; the next pass starts it again');
      })
      .finally(() => {
        this.layerWalking = undefined;
        if (this.walked.entries - entriesAtStart >= this.opts.longWalkEntries && !signal.aborted) for (const listener of this.layerWalkListeners) listener();
      });
  }

  private async measureDueContainers(signal: AbortSignal): Promise<void> {
    for (const [id, layer] of this.containers) {
      const m = layer.measured;
      if (m && !layer.running && m.atMs >= layer.changedAtMs) continue;
      if (layer.dir === undefined) {
        layer.measured = await this.dockerCount(id, signal);
        continue;
      }
      if (m && layer.running && this.opts.now() - m.atMs < this.opts.runningLayerMaxAgeMs) continue;
      const cpuNs = this.witness.cpuNow(layer.owner, layer.running);
      if (m && this.witness.vouches(layer.cpuNs, cpuNs)) {
        layer.measured = { ...m, atMs: this.opts.now() };
        continue;
      }
      layer.init ??= layer.initDir === undefined ? { bytes: 0, inodes: 0 } : await this.measure([layer.initDir], signal);
      const upper = await this.measure([layer.dir], signal);
      layer.measured = { bytes: upper.bytes + layer.init.bytes, inodes: upper.inodes + layer.init.inodes, atMs: upper.atMs };
      layer.cpuNs = cpuNs;
    }
  }

  /**
   * Docker's count of a stopped container's writable layer (`SizeRw`: containerd measures the
   * snapshot for it), its inodes unknown (0); 0 bytes when Docker does not answer in time. Asked
   * once per container until it runs again (then its snapshot is found and walked).
   */
  private async dockerCount(id: string, signal: AbortSignal): Promise<Measured> {
    const asking = new RequestDeadline(this.opts.reconcileTimeoutMs, signal);
    try {
      const [c] = await this.deps.docker.listContainers({ all: true, size: true, filters: { id: [id] } }, { signal: asking.signal });
      const bytes = c?.SizeRw;
      return { bytes: typeof bytes === 'number' && Number.isSafeInteger(bytes) && bytes > 0 ? bytes : 0, inodes: 0, atMs: this.opts.now() };
    } catch (err) {
      if (signal.aborted) throw err;
      this.deps.log.debug({ id, err: errorMessage(err) }, 'storage figures: Docker did not count a stopped container\'s layer');
      return { bytes: 0, inodes: 0, atMs: this.opts.now() };
    } finally {
      asking.end();
    }
  }

  private async reconcileImages(signal: AbortSignal): Promise<void> {
    const listed = await this.deps.docker.listImages({ all: true }, { signal });
    if (this.store.onContainerd) return this.reconcileSnapshots(listed);
    const ids = new Set(listed.map((i) => i.Id));
    let changed = false;
    for (const image of listed) {
      if (this.images.has(image.Id)) continue;
      let diffIds: string[];
      try {
        diffIds = (await this.deps.docker.inspectImage(image.Id, { signal })).RootFS?.Layers ?? [];
      } catch (err) {
        if (err instanceof DockerNotFoundError) continue; // removed meanwhile
        throw err;
      }
      const chains = chainIds(diffIds);
      this.images.set(image.Id, { chains, dockerSize: image.Size });
      for (const chain of chains) {
        if (!this.imageLayers.has(chain)) this.imageLayers.set(chain, this.layerState(chain));
      }
      changed = true;
    }
    for (const id of this.images.keys()) {
      if (!ids.has(id)) {
        this.images.delete(id);
        changed = true;
      }
    }
    if (changed) {
      const used = new Set([...this.images.values()].flatMap((i) => i.chains));
      for (const chain of this.imageLayers.keys()) {
        if (used.has(chain)) continue;
        this.imageLayers.delete(chain);
        this.savedFigures.markChanged();
      }
      this.metadataStale = true;
    }
    this.imagesAtMs = this.opts.now();
  }

  /**
   * The containerd store's layers: every snapshot directory (one listing), each new one measured
   * once; the images only tell whether the content store changed.
   */
  private reconcileSnapshots(listed: ReadonlyArray<{ Id: string; Size: number }>): void {
    const ids = new Set(listed.map((i) => i.Id));
    let changed = ids.size !== this.images.size || [...ids].some((id) => !this.images.has(id));
    this.images.clear();
    for (const image of listed) this.images.set(image.Id, { chains: [], dockerSize: image.Size });
    const dirs = new Set(this.store.snapshotDirs());
    for (const dir of dirs) {
      if (this.imageLayers.has(dir)) continue;
      this.imageLayers.set(dir, { layer: { dockerBytes: 0, dir }, measured: undefined });
      changed = true;
    }
    for (const dir of this.imageLayers.keys()) {
      if (dirs.has(dir)) continue;
      this.imageLayers.delete(dir);
      changed = true;
    }
    if (changed) this.metadataStale = true;
    this.imagesAtMs = this.opts.now();
  }

  private async reconcileContainers(signal: AbortSignal): Promise<void> {
    // The shim's containers, from the state cache (no request to Docker once it is synced).
    const listed = await this.deps.objects.list({ kind: 'any' }, { signal });
    const seen = new Set<string>();
    for (const { id, inspect: held } of listed) {
      let inspect;
      try {
        // The store hands the cache's document along when it answered from it.
        inspect = held ?? (await this.deps.docker.inspectContainer(id, { signal }));
      } catch (err) {
        if (err instanceof DockerNotFoundError) continue;
        throw err;
      }
      const running = inspect.State.Running;
      const known = this.containers.get(id);
      const dir = this.store.containerLayerDir(inspect, known?.dir);
      // On the containerd store a stopped container never seen running is counted by Docker.
      if (dir === undefined && !(this.store.onContainerd && !running)) continue;
      seen.add(id);
      const changedAtMs = running ? Infinity : Math.max(Date.parse(inspect.State.StartedAt) || 0, Date.parse(inspect.State.FinishedAt) || 0);
      const owner: CgroupOwner = { id: id, pid: running ? inspect.State.Pid : 0, cgroupParent: inspect.HostConfig.CgroupParent ?? '' };
      if (known && known.dir === dir) {
        known.running = running;
        known.changedAtMs = changedAtMs;
        known.owner = owner;
      } else {
        this.containers.set(id, { dir, initDir: this.store.initLayerDir(dir), owner, running, changedAtMs, measured: undefined, init: undefined, cpuNs: undefined });
        this.metadataStale = true;
      }
    }
    for (const id of this.containers.keys()) {
      if (seen.has(id)) continue;
      this.containers.delete(id);
      this.metadataStale = true;
    }
  }

  /** A layer seen for the first time: its record, and its figure when an earlier run measured it in the same directory. */
  private layerState(chain: string): ImageLayerState {
    const layer = this.store.imageLayer(chain);
    return { layer, measured: this.savedFigures.take(chain, layer) };
  }

  private async measure(roots: readonly string[], signal: AbortSignal): Promise<Measured> {
    const usage = await this.opts.walk(roots, {
      signal,
      pace: () => {
        this.walked.entries++;
        return this.pace();
      },
    });
    this.walked.trees++;
    return { ...usage, atMs: this.opts.now() };
  }

  private imageFigures(): Measured {
    const total: Measured = { bytes: this.metadata?.bytes ?? 0, inodes: this.metadata?.inodes ?? 0, atMs: this.imagesAtMs };
    let unknownLayers = false;
    const containerDirs = this.store.onContainerd ? this.containerDirs() : new Set<string>();
    for (const state of this.imageLayers.values()) {
      if (state.layer && containerDirs.has(state.layer.dir)) continue;
      if (state.measured) {
        total.bytes += state.measured.bytes;
        total.inodes += state.measured.inodes;
      } else if (state.layer) {
        total.bytes += state.layer.dockerBytes;
      } else {
        unknownLayers = true;
      }
    }
    if (unknownLayers) {
      // Docker keeps its layers elsewhere (another driver, or the containerd image store):
      // its image sizes are the figure, shared layers counted in each image.
      if (!this.loggedFallback) {
        this.loggedFallback = true;
        this.deps.log.info({ root: this.store.root, driver: this.store.driver }, 'storage figures: Docker has no layer records here; images are counted by the sizes Docker reports');
      }
      return { bytes: [...this.images.values()].reduce((sum, i) => sum + i.dockerSize, 0), inodes: 0, atMs: this.imagesAtMs };
    }
    return total;
  }

  private containerFigures(): Measured {
    const total: Measured = { bytes: 0, inodes: 0, atMs: this.opts.now() };
    for (const { measured } of this.containers.values()) {
      if (!measured) continue;
      total.bytes += measured.bytes;
      total.inodes += measured.inodes;
      total.atMs = Math.min(total.atMs, measured.atMs);
    }
    return total;
  }
}
