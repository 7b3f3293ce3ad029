// Reads the figures behind ListPodSandboxMetrics from the kernel: each running container's
// cgroup files (v1 or v2, wherever /proc/<pid>/cgroup puts them), its processes' descriptors in
// /proc, its writable layer's filesystem, and the pod's network counters from the pause
// process's namespace. Docker is not asked anything here: callers hand in the inspect documents
// the state cache holds. One per ShimContext; it remembers each container's cgroup directories
// (fixed for the life of its process) and which unreadable files it has already logged.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { CgroupSetup } from '../cgroups/driver';
import type { Metric, PodSandboxMetrics } from '../cri/types';
import type { ContainerInspect } from '../docker/types';
import { parseMountInfo, parseProcCgroup, type CgroupMount } from '../stats/cgroup-paths';
import type { LayerUsageCache } from '../stats/layer-usage';
import type { Logger } from '../util/logger';
import { containerMetricsOf, podNetworkMetricsOf, type LayerFigures } from './build';
import { dirOfFile, metricDirsByNaming, metricDirsOf, procsFileOf, type MetricCgroupDirs } from './cgroup-dirs';
import { figuresFromV1, figuresFromV2, V1_FILES, V1_PRESENCE_FILES, V2_FILES, V2_PRESENCE_FILES, type CgroupFigures } from './cgroup-figures';
import { parseInterfaceTotals, parsePartitions, parsePids, readProcessFigures, splitDev, type ProcessFigures } from './proc-figures';

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

interface KnownDirs {
  pid: number;
  dirs: MetricCgroupDirs | undefined;
}

/** Unreadable files are logged once each; past this many the record starts again. */
const LOGGED_LIMIT = 1000;

export class PodMetricsCollector {
  private mounts: CgroupMount[] | undefined;
  private partitions: Map<string, string> | undefined;
  private readonly dirs = new Map<string, KnownDirs>();
  private readonly logged = new Set<string>();

  constructor(
    private readonly shim: { readonly cgroups: CgroupSetup; readonly log: Logger },
    /** Shared with the stats RPCs, so a layer is walked once per TTL whichever RPC asks. */
    private readonly layers: LayerUsageCache,
    private readonly procRoot = '/proc',
  ) {}

  /** Metrics of each pod and its running containers; a container gone meanwhile is left out. */
  async collect(pods: readonly PodTarget[]): Promise<PodSandboxMetrics[]> {
    const [mounts, partitions] = await Promise.all([this.cgroupMounts(), this.devicePartitions()]);
    const seen = new Set<string>();
    const out = await Promise.all(
      pods.map(async (pod): Promise<PodSandboxMetrics> => {
        const [metrics, containerMetrics] = await Promise.all([
          this.podNetwork(pod),
          Promise.all(
            pod.containers.map(async (c) => {
              seen.add(c.inspect.Id);
              const metrics = await this.containerMetrics(pod, c, mounts, partitions);
              return metrics && { containerId: c.inspect.Id, metrics };
            }),
          ),
        ]);
        return { podSandboxId: pod.sandbox.Id, metrics, containerMetrics: containerMetrics.filter((m) => m !== undefined) };
      }),
    );
    for (const id of this.dirs.keys()) if (!seen.has(id)) this.dirs.delete(id);
    return out;
  }

  private async cgroupMounts(): Promise<CgroupMount[]> {
    this.mounts ??= parseMountInfo(await fs.readFile(path.join(this.procRoot, 'self', 'mountinfo'), 'utf8'));
    return this.mounts;
  }

  private async devicePartitions(): Promise<Map<string, string>> {
    if (!this.partitions) {
      const text = await this.read(path.join(this.procRoot, 'partitions'));
      this.partitions = parsePartitions(text ?? '');
    }
    return this.partitions;
  }

  /** A file's text; undefined when it does not exist or cannot be read (logged once at debug). */
  private async read(file: string): Promise<string | undefined> {
    try {
      return await fs.readFile(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Missing is normal: the kernel lacks that file here, or the container just stopped.
      if (code !== 'ENOENT' && code !== 'ESRCH' && !this.logged.has(file)) {
        if (this.logged.size >= LOGGED_LIMIT) this.logged.clear();
        this.logged.add(file);
        this.shim.log.debug({ file, err: (err as Error).message }, 'pod metrics: cannot read a file; its metrics are left out');
      }
      return undefined;
    }
  }

  private async dirsOf(inspect: ContainerInspect, mounts: readonly CgroupMount[]): Promise<MetricCgroupDirs | undefined> {
    const pid = inspect.State.Pid;
    const known = this.dirs.get(inspect.Id);
    if (known && known.pid === pid) return known.dirs;
    const text = await this.read(path.join(this.procRoot, String(pid), 'cgroup'));
    const entries = text === undefined ? [] : parseProcCgroup(text);
    // Both drivers name the cgroup after the container ID; anything else is a reused PID.
    const dirs = entries.some((e) => e.path.includes(inspect.Id))
      ? metricDirsOf(entries, mounts)
      : metricDirsByNaming(this.shim.cgroups.driver, inspect.HostConfig.CgroupParent ?? '', inspect.Id, mounts);
    this.dirs.set(inspect.Id, { pid, dirs });
    return dirs;
  }

  private async cgroupFigures(dirs: MetricCgroupDirs): Promise<CgroupFigures | undefined> {
    const names = dirs.version === 1 ? V1_FILES : V2_FILES;
    const texts = await Promise.all(
      names.map((name) => {
        const dir = dirOfFile(dirs, name);
        return dir === undefined ? undefined : this.read(path.join(dir, name));
      }),
    );
    const files: Record<string, string | undefined> = {};
    names.forEach((name, i) => (files[name] = texts[i]));
    const presence: readonly string[] = dirs.version === 1 ? V1_PRESENCE_FILES : V2_PRESENCE_FILES;
    if (presence.every((name) => files[name] === undefined)) return undefined;
    return dirs.version === 1 ? figuresFromV1(files) : figuresFromV2(files);
  }

  private async processFigures(dirs: MetricCgroupDirs): Promise<ProcessFigures | undefined> {
    const procs = procsFileOf(dirs);
    const text = procs === undefined ? undefined : await this.read(procs);
    return text === undefined ? undefined : readProcessFigures(this.procRoot, parsePids(text));
  }

  private async layerFigures(inspect: ContainerInspect, partitions: ReadonlyMap<string, string>): Promise<LayerFigures | undefined> {
    const upper = (inspect.GraphDriver?.Data as Record<string, unknown> | undefined)?.UpperDir;
    if (typeof upper !== 'string' || upper === '') return undefined;
    const [st, sfs, usage] = await Promise.all([
      fs.stat(upper).catch(() => undefined),
      fs.statfs(upper).catch(() => undefined),
      this.layers.usage(inspect.Id, upper).catch(() => undefined),
    ]);
    if (!st) return undefined;
    const { major, minor } = splitDev(st.dev);
    const key = `${major}:${minor}`;
    return {
      device: partitions.get(key) ?? key,
      usageBytes: usage && BigInt(usage.bytes),
      limitBytes: sfs && BigInt(sfs.blocks) * BigInt(sfs.bsize),
      inodesTotal: sfs && BigInt(sfs.files),
      inodesFree: sfs && BigInt(sfs.ffree),
    };
  }

  private async containerMetrics(pod: PodTarget, c: ContainerTarget, mounts: readonly CgroupMount[], partitions: ReadonlyMap<string, string>): Promise<Metric[] | undefined> {
    const inspect = c.inspect;
    if (!inspect.State.Running || !(inspect.State.Pid > 0)) return undefined;
    const dirs = await this.dirsOf(inspect, mounts);
    if (!dirs) return undefined;
    const [cgroup, processes, layer] = await Promise.all([this.cgroupFigures(dirs), this.processFigures(dirs), this.layerFigures(inspect, partitions)]);
    if (!cgroup) {
      // The cgroup went away between the list and the read: the container stopped.
      this.dirs.delete(inspect.Id);
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
      deviceNames: partitions,
    });
  }

  /** The pod's interfaces, read in the pause process's network namespace; none for a host-network pod. */
  private async podNetwork(pod: PodTarget): Promise<Metric[]> {
    const s = pod.sandbox;
    if (s.HostConfig.NetworkMode === 'host' || !s.State.Running || !(s.State.Pid > 0)) return [];
    const text = await this.read(path.join(this.procRoot, String(s.State.Pid), 'net', 'dev'));
    if (text === undefined) return [];
    return podNetworkMetricsOf({ name: pod.name, namespace: pod.namespace, sandboxId: s.Id }, parseInterfaceTotals(text));
  }
}
