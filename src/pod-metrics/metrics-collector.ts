// Reads the figures behind ListPodSandboxMetrics from the kernel: each running container's
// cgroup files (v1 or v2, wherever /proc/<pid>/cgroup puts them), its processes' descriptors in
// /proc, its writable layer's filesystem, and the pod's network counters from the pause
// process's namespace. Docker is not asked anything here: callers hand in the inspect documents
// the state cache holds. One per ShimContext; it remembers each container's layer filesystem,
// and its cgroup reader (../cgroups/reader.ts) each container's cgroup directories (while its
// PID is the same) and files, held open between scrapes.
//
// The files are read synchronously (why: ../cgroups/reader.ts). The loop yields to other calls
// every few pods, so no single stretch blocks for long, and stops there once its caller has
// given up.
import * as fs from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { parseNetDev } from '../cgroups/net-dev';
import { readCgroupFigures, readLimitFiles } from '../cgroups/figures';
import type { CgroupFiles } from '../cgroups/parse';
import type { CgroupDirs } from '../cgroups/paths';
import type { CgroupReader } from '../cgroups/reader';
import { writableLayerDir } from '../docker/documents';
import type { ContainerInspect } from '../docker/types';
import type { DockerStorage } from '../storage/docker-storage';
import { PodMetricsWriter, type EncodedPodMetrics } from './metric-encoding';
import { containerMetricsInto, podLabels, podNetworkMetricsInto, type ContainerReading, type LayerFigures } from './metric-messages';
import { parsePartitions, readProcessFigures, splitDev, type ProcessFigures } from './proc-figures';

interface ContainerTarget {
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

/** A container's writable layer and the device label of its filesystem; fixed for its life. */
interface Layer {
  dir: string;
  device: string;
}

/** What one scrape shares between containers. */
interface Scrape {
  partitions: ReadonlyMap<string, string>;
  /** statfs of each filesystem, once per scrape: every layer on one disk has the same. */
  filesystems: Map<string, fs.StatsFs | undefined>;
}

/** Pods read between two yields to the event loop (about 0.1 ms of reads each). */
const PODS_PER_TURN = 10;

export class PodMetricsCollector {
  private partitions: Map<string, string> | undefined;
  private readonly layers = new Map<string, Layer | undefined>();
  /** Each inspect document's limit files (see limitFiles). */
  private readonly limits = new WeakMap<ContainerInspect, CgroupFiles>();
  private lastAnswerBytes = 0;
  /** The containers' cgroups, their files held open between scrapes (owner: the container ID). */
  private readonly cgroups: CgroupReader;
  private readonly procRoot: string;

  constructor(
    shim: { readonly cgroupReader: CgroupReader },
    /** The writable layers' figures, measured in the background (shared with the stats RPCs and ImageFsInfo). */
    private readonly storage: Pick<DockerStorage, 'writableLayer' | 'layerDir'>,
  ) {
    this.cgroups = shim.cgroupReader;
    this.procRoot = shim.cgroupReader.procRoot;
  }

  /**
   * Metrics of each pod and its running containers, encoded as the answer (./metric-encoding.ts);
   * a container gone meanwhile is left out. Rejects with `signal`'s reason, reading nothing
   * more, once it aborts.
   */
  async collect(pods: readonly PodTarget[], signal: AbortSignal): Promise<EncodedPodMetrics> {
    signal.throwIfAborted();
    const scrape: Scrape = { partitions: this.devicePartitions(), filesystems: new Map() };
    const seen = new Set<string>();
    // Sized by the last answer, so that its buffer seldom grows (each growth a copy).
    const out = new PodMetricsWriter(this.lastAnswerBytes + (this.lastAnswerBytes >> 3));
    let written = 0;
    for (const pod of pods) {
      out.beginPod(pod.sandbox.Id);
      this.podNetwork(pod, out);
      for (const c of pod.containers) {
        seen.add(c.inspect.Id);
        const reading = this.containerReading(pod, c, scrape);
        if (!reading) continue;
        out.beginContainer(c.inspect.Id, reading.labels);
        containerMetricsInto(out, reading);
        out.endContainer();
      }
      out.endPod();
      if (++written % PODS_PER_TURN === 0) {
        await nextTurn();
        signal.throwIfAborted();
      }
    }
    // Not running any more (a scrape sees every running container): forgotten, files closed.
    for (const id of this.layers.keys()) if (!seen.has(id)) this.layers.delete(id);
    this.cgroups.keepOnly(seen);
    const answer = out.finish();
    this.lastAnswerBytes = answer.bytes.length;
    return answer;
  }

  private devicePartitions(): Map<string, string> {
    if (!this.partitions) {
      const text = this.cgroups.readProc('partitions');
      this.partitions = parsePartitions(text ?? '');
    }
    return this.partitions;
  }

  private forget(id: string): void {
    this.layers.delete(id);
    this.cgroups.forget(id);
  }

  private layerOf(inspect: ContainerInspect, partitions: ReadonlyMap<string, string>): Layer | undefined {
    if (this.layers.has(inspect.Id)) return this.layers.get(inspect.Id);
    const layer = this.statLayer(inspect, partitions);
    // On the containerd store the layer is known once the storage's pass found it: asked again until then.
    if (layer !== undefined || writableLayerDir(inspect) !== undefined) this.layers.set(inspect.Id, layer);
    return layer;
  }

  private statLayer(inspect: ContainerInspect, partitions: ReadonlyMap<string, string>): Layer | undefined {
    // Docker names it on a graph driver; on the containerd store the background found it (../storage).
    const upper = writableLayerDir(inspect) ?? this.storage.layerDir(inspect.Id);
    if (upper === undefined) return undefined;
    const st = fs.statSync(upper, { throwIfNoEntry: false });
    if (!st) return undefined;
    const { major, minor } = splitDev(st.dev);
    const key = `${major}:${minor}`;
    return { dir: upper, device: partitions.get(key) ?? key };
  }

  private processFigures(id: string, dirs: CgroupDirs): ProcessFigures | undefined {
    const pids = this.cgroups.pids(dirs, id);
    return pids && readProcessFigures(this.procRoot, pids);
  }

  private layerFigures(id: string, layer: Layer | undefined, scrape: Scrape): LayerFigures | undefined {
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

  /** What is read of a running container; undefined when it does not run (any more). */
  private containerReading(pod: PodTarget, c: ContainerTarget, scrape: Scrape): ContainerReading | undefined {
    const inspect = c.inspect;
    if (!inspect.State.Running || !(inspect.State.Pid > 0)) return undefined;
    const dirs = this.cgroups.dirsOf({ id: inspect.Id, pid: inspect.State.Pid, cgroupParent: inspect.HostConfig.CgroupParent ?? '' });
    if (!dirs) return undefined;
    // The kernel files are read here and now (the limits once per inspect document: see limitFiles); the layer's figure is the background's last.
    const limits = this.limitFiles(inspect, dirs);
    const cgroup = limits && readCgroupFigures(this.cgroups, dirs, inspect.Id, 'measured', limits);
    const processes = cgroup && this.processFigures(inspect.Id, dirs);
    const layer = cgroup && this.layerFigures(inspect.Id, this.layerOf(inspect, scrape.partitions), scrape);
    if (!cgroup) {
      // The cgroup went away between the list and the read: the container stopped.
      this.forget(inspect.Id);
      return undefined;
    }
    const started = Date.parse(inspect.State.StartedAt);
    return {
      labels: { pod: pod.name, namespace: pod.namespace, container: c.name, id: inspect.Id, image: inspect.Config.Image },
      cgroup,
      processes,
      layer,
      startedAt: Number.isFinite(started) ? BigInt(Math.floor(started / 1000)) : undefined,
      seenAt: BigInt(Math.floor(Date.now() / 1000)),
      deviceNames: scrape.partitions,
    };
  }

  /**
   * The container's limit files, read once per inspect document: a limit changes only with the
   * container's resources (UpdateContainerResources, `docker update`), after which Docker's
   * update event has the state cache inspect it again, a new document. Read without being
   * kept open, as they are not read again. Undefined when the cgroup is gone.
   */
  private limitFiles(inspect: ContainerInspect, dirs: CgroupDirs): CgroupFiles | undefined {
    let files = this.limits.get(inspect);
    if (files === undefined) {
      files = readLimitFiles(this.cgroups, dirs);
      if (files) this.limits.set(inspect, files);
    }
    return files;
  }

  /** The pod's interfaces, read in the pause process's network namespace; none for a host-network pod. */
  private podNetwork(pod: PodTarget, out: PodMetricsWriter): void {
    const s = pod.sandbox;
    if (s.HostConfig.NetworkMode === 'host' || !s.State.Running || !(s.State.Pid > 0)) return;
    const text = this.cgroups.netDev(s.State.Pid);
    if (text === undefined) return;
    out.beginMetrics(podLabels({ name: pod.name, namespace: pod.namespace, sandboxId: s.Id }));
    podNetworkMetricsInto(out, parseNetDev(text));
  }
}
