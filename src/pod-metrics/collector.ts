// Reads the figures behind ListPodSandboxMetrics from the kernel: each running container's
// cgroup files (v1 or v2, wherever /proc/<pid>/cgroup puts them), its processes' descriptors in
// /proc, its writable layer's filesystem, and the pod's network counters from the pause
// process's namespace. Docker is not asked anything here: callers hand in the inspect documents
// the state cache holds. One per ShimContext; it remembers what is fixed for the life of a
// container's process (its cgroup files' paths, its layer's filesystem) and which unreadable
// files it has already logged.
//
// The files are read synchronously: they are kernel pseudo-files answered from memory, and
// fs/promises' open/fstat/read/close round trips through the thread pool cost several times
// the read itself (measured: ~100 ms against ~25 ms for 20 containers). Cgroup files are kept
// open between scrapes (../cgroups/kernel-files.ts); /proc/<pid>/net/dev is not, as an open one
// keeps the pod's network namespace alive after the pod. The loop yields to other calls every
// few pods, so no single stretch blocks for long, and stops there once its caller has given up.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { CgroupSetup } from '../cgroups/driver';
import type { Metric, PodSandboxMetrics } from '../cri/types';
import type { ContainerInspect } from '../docker/types';
import { parseMountInfo, parseProcCgroup, type CgroupMount } from '../cgroups/paths';
import type { DockerStorage } from '../storage/docker-storage';
import type { Logger } from '../util/logger';
import { containerMetricsOf, podNetworkMetricsOf, type LayerFigures } from './build';
import { dirOfFile, metricDirsByNaming, metricDirsOf, procsFileOf, type MetricCgroupDirs } from './cgroup-dirs';
import { KernelFiles } from '../cgroups/kernel-files';
import { figuresFromV1, figuresFromV2, V1_FILES, V1_PRESENCE_FILES, V2_FILES, V2_PRESENCE_FILES, type CgroupFigures } from './cgroup-figures';
import { parseNetDev } from '../cgroups/net-dev';
import { parsePids } from '../cgroups/parse';
import { parsePartitions, readProcessFigures, splitDev, type ProcessFigures } from './proc-figures';

export interface ContainerTarget {
  inspect: ContainerInspect;
  /** The container's CRI name. */
  name: string;
}

export interface PodTarget {
  /** The pause container. */
  sandbox: ContainerInspect;
  name: string;
  namespace: string;
  containers: readonly ContainerTarget[];
}

/** What stays the same for a container's process: worked out once, used on every scrape. */
interface Known {
  pid: number;
  dirs: MetricCgroupDirs;
  /** Each cgroup file the figures need, by name, with its directory (undefined: no such controller). */
  files: ReadonlyArray<readonly [string, string | undefined]>;
  procs: string | undefined;
  /** The writable layer and the device label of its filesystem. */
  layer: { dir: string; device: string } | undefined;
}

/** What one scrape shares between containers. */
interface Scrape {
  mounts: readonly CgroupMount[];
  partitions: ReadonlyMap<string, string>;
  /** statfs of each filesystem, once per scrape: every layer on one disk has the same. */
  filesystems: Map<string, fs.StatsFs | undefined>;
}

/** Unreadable files are logged once each; past this many the record starts again. */
const LOGGED_LIMIT = 1000;
/** Pods read between two yields to the event loop (about 0.1 ms of reads each). */
const PODS_PER_TURN = 10;

export class PodMetricsCollector {
  private mounts: CgroupMount[] | undefined;
  private partitions: Map<string, string> | undefined;
  private readonly known = new Map<string, Known | undefined>();
  private readonly logged = new Set<string>();
  /** Unreadable files are logged once each at debug; their metrics are left out. */
  private readonly files = new KernelFiles((file, err) => {
    if (this.logged.has(file)) return;
    if (this.logged.size >= LOGGED_LIMIT) this.logged.clear();
    this.logged.add(file);
    this.shim.log.debug({ file, err: err.message }, 'pod metrics: cannot read a file; its metrics are left out');
  });

  constructor(
    private readonly shim: { readonly cgroups: CgroupSetup; readonly log: Logger },
    /** The writable layers' figures, measured in the background (shared with the stats RPCs and ImageFsInfo). */
    private readonly storage: Pick<DockerStorage, 'writableLayer'>,
    private readonly procRoot = '/proc',
  ) {}

  /**
   * Metrics of each pod and its running containers; a container gone meanwhile is left out.
   * Rejects with `signal`'s reason, reading nothing more, once it aborts.
   */
  async collect(pods: readonly PodTarget[], signal: AbortSignal): Promise<PodSandboxMetrics[]> {
    signal.throwIfAborted();
    const scrape: Scrape = { mounts: this.cgroupMounts(), partitions: this.devicePartitions(), filesystems: new Map() };
    const seen = new Set<string>();
    const pending: Array<Promise<PodSandboxMetrics>> = [];
    for (const pod of pods) {
      const metrics = this.podNetwork(pod);
      const containers = pod.containers.map((c) => {
        seen.add(c.inspect.Id);
        return this.containerMetrics(pod, c, scrape).then((metrics) => metrics && { containerId: c.inspect.Id, metrics });
      });
      pending.push(
        Promise.all(containers).then((found) => ({
          podSandboxId: pod.sandbox.Id,
          metrics,
          containerMetrics: found.filter((m) => m !== undefined),
        })),
      );
      if (pending.length % PODS_PER_TURN === 0) {
        await nextTurn();
        if (signal.aborted) {
          // What was read so far is nobody's: its failures too.
          void Promise.allSettled(pending);
          throw signal.reason;
        }
      }
    }
    for (const id of this.known.keys()) if (!seen.has(id)) this.forget(id);
    for (const id of this.files.owners()) if (!seen.has(id)) this.files.release(id);
    return Promise.all(pending);
  }

  private cgroupMounts(): CgroupMount[] {
    this.mounts ??= parseMountInfo(fs.readFileSync(path.join(this.procRoot, 'self', 'mountinfo'), 'utf8'));
    return this.mounts;
  }

  private devicePartitions(): Map<string, string> {
    if (!this.partitions) {
      const text = this.files.read(path.join(this.procRoot, 'partitions'));
      this.partitions = parsePartitions(text ?? '');
    }
    return this.partitions;
  }

  /** Closes the files held open. */
  close(): void {
    this.files.closeAll();
    this.known.clear();
  }

  private forget(id: string): void {
    this.known.delete(id);
    this.files.release(id);
  }

  private knownOf(inspect: ContainerInspect, scrape: Scrape): Known | undefined {
    const pid = inspect.State.Pid;
    if (this.known.has(inspect.Id)) {
      const known = this.known.get(inspect.Id);
      if (known?.pid === pid) return known;
    }
    // A new process (a restart): its cgroup may be a new directory at the same path.
    this.files.release(inspect.Id);
    const text = this.files.read(path.join(this.procRoot, String(pid), 'cgroup'));
    const entries = text === undefined ? [] : parseProcCgroup(text);
    // Both drivers name the cgroup after the container ID; anything else is a reused PID.
    const dirs = entries.some((e) => e.path.includes(inspect.Id))
      ? metricDirsOf(entries, scrape.mounts)
      : metricDirsByNaming(this.shim.cgroups.driver, inspect.HostConfig.CgroupParent ?? '', inspect.Id, scrape.mounts);
    const known = dirs && {
      pid,
      dirs,
      files: (dirs.version === 1 ? V1_FILES : V2_FILES).map((name) => [name, dirOfFile(dirs, name)] as const),
      procs: procsFileOf(dirs),
      layer: this.layerOf(inspect, scrape.partitions),
    };
    this.known.set(inspect.Id, known);
    return known;
  }

  private layerOf(inspect: ContainerInspect, partitions: ReadonlyMap<string, string>): Known['layer'] {
    const upper = (inspect.GraphDriver?.Data as Record<string, unknown> | undefined)?.UpperDir;
    if (typeof upper !== 'string' || upper === '') return undefined;
    const st = fs.statSync(upper, { throwIfNoEntry: false });
    if (!st) return undefined;
    const { major, minor } = splitDev(st.dev);
    const key = `${major}:${minor}`;
    return { dir: upper, device: partitions.get(key) ?? key };
  }

  private cgroupFigures(id: string, known: Known): CgroupFigures | undefined {
    const files: Record<string, string | undefined> = {};
    // A file this host lacks is not looked for again (KernelFiles.hostFile).
    for (const [name, dir] of known.files) files[name] = this.files.hostFile(dir, name, id);
    const v1 = known.dirs.version === 1;
    if ((v1 ? V1_PRESENCE_FILES : V2_PRESENCE_FILES).every((name) => files[name] === undefined)) return undefined;
    return v1 ? figuresFromV1(files) : figuresFromV2(files);
  }

  private processFigures(id: string, known: Known): ProcessFigures | undefined {
    const text = known.procs === undefined ? undefined : this.files.read(known.procs, id);
    return text === undefined ? undefined : readProcessFigures(this.procRoot, parsePids(text));
  }

  private layerFigures(id: string, known: Known, scrape: Scrape): LayerFigures | undefined {
    const layer = known.layer;
    if (!layer) return undefined;
    if (!scrape.filesystems.has(layer.device)) {
      let sfs: fs.StatsFs | undefined;
      try {
        sfs = fs.statfsSync(layer.dir);
      } catch {
        sfs = undefined;
      }
      scrape.filesystems.set(layer.device, sfs);
    }
    const sfs = scrape.filesystems.get(layer.device);
    const usage = this.storage.writableLayer(id);
    return {
      device: layer.device,
      usageBytes: usage && BigInt(usage.bytes),
      limitBytes: sfs && BigInt(sfs.blocks) * BigInt(sfs.bsize),
      inodesTotal: sfs && BigInt(sfs.files),
      inodesFree: sfs && BigInt(sfs.ffree),
    };
  }

  private async containerMetrics(pod: PodTarget, c: ContainerTarget, scrape: Scrape): Promise<Metric[] | undefined> {
    const inspect = c.inspect;
    if (!inspect.State.Running || !(inspect.State.Pid > 0)) return undefined;
    const known = this.knownOf(inspect, scrape);
    if (!known) return undefined;
    // The kernel files are read here and now; the layer's figure is the background's last.
    const cgroup = this.cgroupFigures(inspect.Id, known);
    const processes = cgroup && this.processFigures(inspect.Id, known);
    const layer = cgroup && this.layerFigures(inspect.Id, known, scrape);
    if (!cgroup) {
      // The cgroup went away between the list and the read: the container stopped.
      this.forget(inspect.Id);
      return undefined;
    }
    const started = Date.parse(inspect.State.StartedAt);
    return containerMetricsOf({
      labels: { pod: pod.name, namespace: pod.namespace, container: c.name, id: inspect.Id, image: inspect.Config.Image },
      cgroup,
      processes,
      layer,
      startedAt: Number.isFinite(started) ? BigInt(Math.floor(started / 1000)) : undefined,
      seenAt: BigInt(Math.floor(Date.now() / 1000)),
      deviceNames: scrape.partitions,
    });
  }

  /** The pod's interfaces, read in the pause process's network namespace; none for a host-network pod. */
  private podNetwork(pod: PodTarget): Metric[] {
    const s = pod.sandbox;
    if (s.HostConfig.NetworkMode === 'host' || !s.State.Running || !(s.State.Pid > 0)) return [];
    // Opened per scrape, never held: an open file in /proc/<pid>/net keeps the namespace alive (../cgroups/kernel-files.ts).
    const text = this.files.read(path.join(this.procRoot, String(s.State.Pid), 'net', 'dev'));
    if (text === undefined) return [];
    return podNetworkMetricsOf({ name: pod.name, namespace: pod.namespace, sandboxId: s.Id }, parseNetDev(text));
  }
}
