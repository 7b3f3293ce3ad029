// Gathers the figures behind the stats RPCs. The first time a container is seen running it is
// looked up once to find its cgroup directories (through ../cgroups/reader.ts, from its init
// process) and its writable layer, in the inspect document the state cache holds (Docker is
// asked only while the cache is unsynced); later calls read the cgroup files alone. Seen stopped, it is looked up afresh when it runs again (a
// new process). The CPU rate tracker lives here too; the writable layers' figures come from
// ../storage, measured in the background.
import type { ContainerAttributes, ContainerStats, NetworkUsage, PodSandboxAttributes } from '../cri/types';
import type { ContainerInspect } from '../docker/types';
import type { ShimObject } from '../object-store/shim-objects';
import { DockerNotFoundError } from '../errors';
import type { DockerClient } from '../docker/client';
import { containerFromObject } from '../translate/to-cri/container-convert';
import { sandboxFromObject } from '../translate/to-cri/sandbox-convert';
import type { DockerStorage } from '../storage/docker-storage';
import { podCgroupDirs, type CgroupDirs } from '../cgroups/paths';
import type { CgroupReader } from '../cgroups/reader';
import { FIGURE_FILES, readCgroupFigures, type CgroupFigures } from '../cgroups/figures';
import { containerStatsOf, networkUsage, oncePerObject, type ContainerFigures } from './stats-convert';
import { CpuRateTracker } from './cpu-rate';
import { parseNetDev } from '../cgroups/net-dev';
import { msToNanos, nowNanos } from '../util/time';

/** Where a container's figures are read from; fixed for its life. */
interface Target {
  /** Undefined while the container is not running (a created one has no cgroup yet). */
  cgroup: CgroupDirs | undefined;
  /** For a pause container: its pod's cgroup, when the pod has one of its own. */
  podCgroup: CgroupDirs | undefined;
  lastSeen: number;
}

/** Forget containers not asked about for this long (they are most likely removed). */
const FORGET_AFTER_MS = 10 * 60_000;

/** Which of a cgroup's files a sample reads (../cgroups/figures.ts). */
type FigureFiles = Exclude<keyof typeof FIGURE_FILES, 'all'>;

export class StatsCollector {
  private readonly targets = new Map<string, Target>();
  readonly rates = new CpuRateTracker();
  /** A container's CRI attributes, made once per object (see oncePerObject). */
  readonly containerAttributes = oncePerObject((c: ShimObject): ContainerAttributes => {
    const { id, metadata, labels, annotations } = containerFromObject(c);
    return { id, metadata, labels, annotations };
  });
  /** A pod's CRI attributes, made once per object of its pause container. */
  readonly podAttributes = oncePerObject((pause: ShimObject): PodSandboxAttributes => {
    const { id, metadata, labels, annotations } = sandboxFromObject(pause, undefined);
    return { id, metadata, labels, annotations };
  });
  /** The containers' cgroups, their files held open between calls (owners: the ID, and "<ID>/pod" for a pod's cgroup). */
  private readonly cgroups: CgroupReader;

  constructor(
    private readonly shim: { readonly docker: DockerClient; readonly cgroupReader: CgroupReader; readonly storage: Pick<DockerStorage, 'writableLayer' | 'mountpoint'> },
  ) {
    this.cgroups = shim.cgroupReader;
  }

  /** The container's target, inspecting it when not known yet. Undefined: it was removed meanwhile. */
  private async target(c: ShimObject, signal: AbortSignal): Promise<Target | undefined> {
    signal.throwIfAborted();
    const known = this.targets.get(c.id);
    const running = c.status === 'running';
    if (known && !running && known.cgroup !== undefined) {
      // Its cgroup went with its process; a restart is a new process, looked up afresh.
      known.cgroup = known.podCgroup = undefined;
      this.cgroups.forget(c.id);
    }
    if (known && (known.cgroup !== undefined || !running)) {
      known.lastSeen = Date.now();
      return known;
    }
    let inspect: ContainerInspect;
    try {
      inspect = c.inspect ?? (await this.shim.docker.inspectContainer(c.id, { signal }));
    } catch (err) {
      if (err instanceof DockerNotFoundError) return undefined;
      throw err;
    }
    // The list's word decides, as for a known target: one it shows stopped gets no cgroup.
    const pid = running && inspect.State.Running ? inspect.State.Pid : 0;
    const cgroup = this.cgroups.dirsOf({ id: inspect.Id, pid, cgroupParent: inspect.HostConfig.CgroupParent ?? '' });
    const target: Target = {
      cgroup,
      podCgroup: cgroup && podCgroupDirs(cgroup, inspect.HostConfig.CgroupParent ?? '', inspect.Id),
      lastSeen: Date.now(),
    };
    this.targets.set(c.id, target);
    return target;
  }

  private sampleOf(id: string, target: Target, which: 'cgroup' | 'podCgroup' = 'cgroup', files: FigureFiles = 'usage'): CgroupFigures | undefined {
    const dirs = target[which];
    if (!dirs) return undefined;
    const sample = readCgroupFigures(this.cgroups, dirs, which === 'cgroup' ? id : `${id}/pod`, files);
    // Stopped between the list and the read; a restarted one gets a fresh cgroup lookup.
    if (!sample) this.forget(id);
    return sample;
  }

  /** The writable layer's last figure from the background's measurements (none before the first). */
  private layerOf(id: string, target: Target | undefined): ContainerFigures['layer'] {
    if (!target) return undefined;
    const usage = this.shim.storage.writableLayer(id);
    // The filesystem is the one ImageFsInfo names (the graph driver's directory, or the snapshotter's).
    return usage && { usage, mountpoint: this.shim.storage.mountpoint, timestamp: msToNanos(usage.atMs) };
  }

  /** Stats of one container; undefined when it was removed meanwhile. */
  async containerStats(c: ShimObject, signal: AbortSignal): Promise<ContainerStats | undefined> {
    // No process count: a ContainerStats message has none.
    return (await this.containerFigures(c, signal, 'container'))?.stats;
  }

  /** The stats and the raw sample (pods add the samples up, the process count with them). */
  async containerFigures(
    c: ShimObject,
    signal: AbortSignal,
    files: FigureFiles = 'usage',
  ): Promise<{ stats: ContainerStats; sample: CgroupFigures | undefined } | undefined> {
    const target = await this.target(c, signal);
    // The files are read only for a caller still waiting (the inspect above may have taken a while).
    signal.throwIfAborted();
    if (!target) return undefined;
    const sample = this.sampleOf(c.id, target, 'cgroup', files);
    const layer = this.layerOf(c.id, target);
    const timestamp = nowNanos();
    const nanoCores = sample?.cpuUsageNs === undefined ? undefined : this.rates.rate(c.id, sample.cpuUsageNs, process.hrtime.bigint());
    if (!sample) this.rates.forget(c.id);
    const stats = containerStatsOf({ attributes: this.containerAttributes(c), sample, nanoCores, layer, timestamp });
    return { stats, sample };
  }

  /**
   * The pause container's sample, its pod cgroup's sample (when the pod has its own cgroup),
   * and its network namespace's counters.
   */
  async sandboxFigures(
    pause: ShimObject,
    signal: AbortSignal,
  ): Promise<{ sample: CgroupFigures | undefined; podSample: CgroupFigures | undefined; network: NetworkUsage | undefined }> {
    const target = await this.target(pause, signal);
    signal.throwIfAborted();
    const sample = target && this.sampleOf(pause.id, target);
    const podSample = target && sample && this.sampleOf(pause.id, target, 'podCgroup');
    let network: NetworkUsage | undefined;
    if (sample && target?.cgroup) {
      const text = this.podNetDev(pause.id, target.cgroup);
      if (text !== undefined) network = networkUsage(parseNetDev(text), nowNanos());
    }
    return { sample, podSample, network };
  }

  /** /proc/<pid>/net/dev of the pod's first process (the pause process, asked each time: a restarted pause has a new PID). */
  private podNetDev(id: string, cgroup: CgroupDirs): string | undefined {
    const pid = this.cgroups.pids(cgroup, id)?.[0];
    return pid === undefined ? undefined : this.cgroups.netDev(pid);
  }

  private forget(id: string): void {
    this.targets.delete(id);
    // Its cgroup lookup and the files held for it and its pod.
    this.cgroups.forget(id);
  }

  /** Drops what is kept for containers not asked about for a long while. */
  sweep(now = Date.now()): void {
    for (const [id, t] of this.targets) if (now - t.lastSeen > FORGET_AFTER_MS) this.forget(id);
    const live = (key: string): boolean => this.targets.has(key.replace(/^pod:/, ''));
    this.rates.prune(live);
  }
}
