// Gathers the figures behind the stats RPCs. The first time a container is seen it is
// inspected once to find its cgroup directories (from /proc/<pid>/cgroup of its init process)
// and its writable layer; both stay the same for the container's life, so later calls read
// the cgroup files without asking Docker anything but the one list call. The CPU rate tracker
// lives here too; the writable layers' figures come from ../storage, measured in the background.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { ContainerStats, NetworkUsage } from '../cri/types';
import type { ContainerInspect, ContainerSummary } from '../docker/types';
import { DockerNotFoundError } from '../errors';
import type { CgroupSetup } from '../cgroups/driver';
import type { DockerClient } from '../docker/client';
import type { Logger } from '../util/logger';
import { containerFromSummary } from '../status/container-convert';
import type { DockerStorage } from '../storage/docker-storage';
import {
  cgroupPathFor,
  dirsFromCgroupPath,
  dirsFromProcCgroup,
  parseMountInfo,
  parseProcCgroup,
  podCgroupDirs,
  type CgroupDirs,
  type CgroupMount,
} from '../cgroups/paths';
import { CgroupGoneError, firstProcessOf, readCgroupSampleSync, type CgroupSample } from './cgroup-sample';
import { KernelFiles } from '../cgroups/kernel-files';
import { containerStatsOf, networkUsage, type ContainerFigures } from './convert';
import { CpuRateTracker } from './cpu-rate';
import { parseNetDev } from '../cgroups/net-dev';
import { msToNanos, nowNanos } from '../util/time';

/** Where a container's figures are read from; fixed for its life. */
interface Target {
  /** Undefined until the container has run (a created container has no cgroup yet). */
  cgroup: CgroupDirs | undefined;
  upperDir: string | undefined;
  /** For a pause container: its pod's cgroup, when the pod has one of its own. */
  podCgroup: CgroupDirs | undefined;
  lastSeen: number;
}

/** Forget containers not asked about for this long (they are most likely removed). */
const FORGET_AFTER_MS = 10 * 60_000;

export interface MemberSample {
  id: string;
  sample: CgroupSample | undefined;
}

export class StatsCollector {
  private mounts: CgroupMount[] | undefined;
  private readonly targets = new Map<string, Target>();
  readonly rates = new CpuRateTracker();
  /** The cgroup files each container's samples are read from, held open between calls. */
  private readonly files: KernelFiles;
  /** File names whose read error was logged already: a broken file would otherwise log on every scrape. */
  private readonly loggedFiles = new Set<string>();

  constructor(
    private readonly shim: { readonly docker: DockerClient; readonly cgroups: CgroupSetup; readonly log: Logger; readonly storage: Pick<DockerStorage, 'writableLayer'> },
    private readonly procRoot = '/proc',
  ) {
    this.files = new KernelFiles((file, err) => {
      const key = `${path.basename(file)} ${err.code ?? ''}`;
      if (this.loggedFiles.has(key)) return;
      this.loggedFiles.add(key);
      this.shim.log.debug({ file, err: err.message }, 'stats: cannot read a cgroup file; its figures are left out');
    });
  }

  private async cgroupMounts(): Promise<CgroupMount[]> {
    this.mounts ??= parseMountInfo(await fs.readFile(path.join(this.procRoot, 'self', 'mountinfo'), 'utf8'));
    return this.mounts;
  }

  private async cgroupOf(inspect: ContainerInspect): Promise<CgroupDirs | undefined> {
    if (!inspect.State.Running || !(inspect.State.Pid > 0)) return undefined;
    const mounts = await this.cgroupMounts();
    try {
      const entries = parseProcCgroup(await fs.readFile(path.join(this.procRoot, String(inspect.State.Pid), 'cgroup'), 'utf8'));
      // Both drivers name the container's cgroup after its ID; anything else means the PID
      // was reused by another process after the container's own exited.
      const dirs = entries.some((e) => e.path.includes(inspect.Id)) ? dirsFromProcCgroup(entries, mounts) : undefined;
      if (dirs) return dirs;
    } catch (err) {
      this.shim.log.debug({ id: inspect.Id, err: (err as Error).message }, 'stats: cannot read the container process cgroup; using the driver naming');
    }
    // The process is not visible here (another PID namespace): Docker's naming tells the path.
    const guess = cgroupPathFor(this.shim.cgroups.driver, inspect.HostConfig.CgroupParent ?? '', inspect.Id);
    return dirsFromCgroupPath(guess, mounts);
  }

  /** The container's target, inspecting it when not known yet. Undefined: it was removed meanwhile. */
  private async target(c: ContainerSummary, signal: AbortSignal): Promise<Target | undefined> {
    signal.throwIfAborted();
    const known = this.targets.get(c.Id);
    const running = c.State === 'running';
    if (known && (known.cgroup !== undefined || !running)) {
      known.lastSeen = Date.now();
      return known;
    }
    let inspect: ContainerInspect;
    try {
      inspect = await this.shim.docker.inspectContainer(c.Id, { signal });
    } catch (err) {
      if (err instanceof DockerNotFoundError) return undefined;
      throw err;
    }
    const upper = (inspect.GraphDriver?.Data as Record<string, unknown> | undefined)?.UpperDir;
    const cgroup = await this.cgroupOf(inspect);
    const target: Target = {
      cgroup,
      upperDir: typeof upper === 'string' && upper !== '' ? upper : undefined,
      podCgroup: cgroup && podCgroupDirs(cgroup, inspect.HostConfig.CgroupParent ?? '', inspect.Id),
      lastSeen: Date.now(),
    };
    this.targets.set(c.Id, target);
    return target;
  }

  private async sampleOf(id: string, target: Target | undefined, running: boolean, which: 'cgroup' | 'podCgroup' = 'cgroup'): Promise<CgroupSample | undefined> {
    const dirs = target?.[which];
    const owner = which === 'cgroup' ? id : `${id}/pod`;
    if (!running) this.files.release(owner); // its cgroup went with its process
    if (!running || !dirs) return undefined;
    try {
      return readCgroupSampleSync(dirs, this.files, owner);
    } catch (err) {
      if (err instanceof CgroupGoneError) {
        // Stopped between the list and the read; a restarted one gets a fresh cgroup lookup.
        this.forget(id);
        return undefined;
      }
      throw err;
    }
  }

  /** The writable layer's last figure from the background's measurements (none before the first). */
  private layerOf(id: string, target: Target | undefined): ContainerFigures['layer'] {
    if (!target?.upperDir) return undefined;
    const usage = this.shim.storage.writableLayer(id);
    // <storage dir>/<layer>/diff: the storage directory is what ImageFsInfo reports as the filesystem.
    return usage && { usage, mountpoint: path.dirname(path.dirname(target.upperDir)), timestamp: msToNanos(usage.atMs) };
  }

  /** Stats of one container; undefined when it was removed meanwhile. */
  async containerStats(c: ContainerSummary, signal: AbortSignal): Promise<ContainerStats | undefined> {
    return (await this.containerFigures(c, signal))?.stats;
  }

  /** The stats and the raw sample (pods add the samples up). */
  async containerFigures(c: ContainerSummary, signal: AbortSignal): Promise<{ stats: ContainerStats; sample: CgroupSample | undefined } | undefined> {
    const target = await this.target(c, signal);
    // The files are read only for a caller still waiting (the inspect above may have taken a while).
    signal.throwIfAborted();
    if (!target) return undefined;
    const running = c.State === 'running';
    const sample = await this.sampleOf(c.Id, target, running);
    const layer = this.layerOf(c.Id, target);
    const timestamp = nowNanos();
    const nanoCores = sample?.cpuUsageNs === undefined ? undefined : this.rates.rate(c.Id, sample.cpuUsageNs, process.hrtime.bigint());
    if (!sample) this.rates.forget(c.Id);
    const { id, metadata, labels, annotations } = containerFromSummary(c);
    const stats = containerStatsOf({ attributes: { id, metadata, labels, annotations }, sample, nanoCores, layer, timestamp });
    return { stats, sample };
  }

  /**
   * The pause container's sample, its pod cgroup's sample (when the pod has its own cgroup),
   * and its network namespace's counters.
   */
  async sandboxFigures(
    pause: ContainerSummary,
    signal: AbortSignal,
  ): Promise<{ sample: CgroupSample | undefined; podSample: CgroupSample | undefined; network: NetworkUsage | undefined }> {
    const target = await this.target(pause, signal);
    signal.throwIfAborted();
    const running = pause.State === 'running';
    const [sample, podSample] = await Promise.all([this.sampleOf(pause.Id, target, running), this.sampleOf(pause.Id, target, running, 'podCgroup')]);
    let network: NetworkUsage | undefined;
    if (sample && target?.cgroup) {
      const text = this.podNetDev(pause.Id, target.cgroup);
      if (text !== undefined) network = networkUsage(parseNetDev(text), nowNanos());
    }
    return { sample, podSample, network };
  }

  /** /proc/<pid>/net/dev of the pod's first process (the pause process, asked each time: a restarted pause has a new PID). */
  private podNetDev(id: string, cgroup: CgroupDirs): string | undefined {
    const pid = firstProcessOf(cgroup, this.files, id);
    // Opened per call, never held: an open file in /proc/<pid>/net keeps the namespace alive (../cgroups/kernel-files.ts).
    return pid === undefined ? undefined : this.files.read(path.join(this.procRoot, String(pid), 'net', 'dev'));
  }

  /** Forgets a container's cgroup lookup and closes the files held for it. */
  private forget(id: string): void {
    this.targets.delete(id);
    this.files.release(id);
    this.files.release(`${id}/pod`);
  }

  /** Closes every file held open (at shutdown). */
  close(): void {
    this.targets.clear();
    this.files.closeAll();
  }

  /** Drops what is kept for containers not asked about for a long while. */
  sweep(now = Date.now()): void {
    for (const [id, t] of this.targets) if (now - t.lastSeen > FORGET_AFTER_MS) this.forget(id);
    const live = (key: string): boolean => this.targets.has(key.replace(/^pod:/, ''));
    this.rates.prune(live);
  }
}
