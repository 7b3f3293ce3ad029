// Cgroup figures (../cgroups/figures.ts) and counters as CRI's stats messages. Pure. A figure nobody measured is left out
// rather than reported as zero, except for a container that is not running, whose usage is
// zero by definition.
import type {
  ContainerAttributes,
  ContainerStats,
  CpuUsage,
  FilesystemUsage,
  IoUsage,
  MemoryUsage,
  NetworkInterfaceUsage,
  NetworkUsage,
  PsiData,
  PsiStats,
  SwapUsage,
} from '../cri/types';
import type { DiskUsage } from '../util/disk-usage';
import { u64 } from '../cri/u64';
import { defined } from '../util/defined';
import { DEFAULT_INTERFACE, type InterfaceCounters } from '../cgroups/net-dev';
import type { Pressure, PressureLine } from '../cgroups/parse';
import type { CgroupFigures, Limit } from '../cgroups/figures';

/**
 * Total is the kernel's microseconds as they stand, as containerd and cAdvisor (hence kubelet's
 * summary from either) pass them on, although the proto's comment says nanoseconds.
 */
function psiData(line: PressureLine): PsiData {
  return { Total: u64(line.totalUsec)!.value, Avg10: line.avg10, Avg60: line.avg60, Avg300: line.avg300 };
}

/** A PSI file as CRI's PsiStats; undefined when the cgroup has none (cgroup v1, or no CONFIG_PSI). */
function psiStats(p: Pressure | undefined): PsiStats | undefined {
  if (!p) return undefined;
  const out: PsiStats = {};
  if (p.full) out.Full = psiData(p.full);
  if (p.some) out.Some = psiData(p.some);
  return out;
}

/** What is left under a limit; undefined without one. */
function available(limit: Limit | undefined, used: bigint | undefined): bigint | undefined {
  if (limit === undefined || limit === 'unlimited' || used === undefined) return undefined;
  return limit > used ? limit - used : 0n;
}

export function cpuUsage(sample: CgroupFigures | undefined, nanoCores: bigint | undefined, timestamp: string): CpuUsage {
  if (!sample) return { timestamp, usageCoreNanoSeconds: u64(0), usageNanoCores: u64(0) };
  return defined({ timestamp, usageCoreNanoSeconds: u64(sample.cpuUsageNs), usageNanoCores: u64(nanoCores), psi: psiStats(sample.cpuPressure) });
}

export function memoryUsage(sample: CgroupFigures | undefined, timestamp: string): MemoryUsage {
  if (!sample) return { timestamp, workingSetBytes: u64(0), usageBytes: u64(0), rssBytes: u64(0) };
  return defined({
    timestamp,
    workingSetBytes: u64(sample.workingSetBytes),
    availableBytes: u64(available(sample.memoryLimitBytes, sample.workingSetBytes)),
    usageBytes: u64(sample.memoryUsageBytes),
    rssBytes: u64(sample.rssBytes),
    pageFaults: u64(sample.pageFaults),
    majorPageFaults: u64(sample.majorPageFaults),
    psi: psiStats(sample.memoryPressure),
  });
}

/** CRI's IoUsage holds PSI alone: left out where there is no io.pressure (cgroup v1). */
export function ioUsage(sample: CgroupFigures | undefined, timestamp: string): IoUsage | undefined {
  const psi = psiStats(sample?.ioPressure);
  return psi && { timestamp, psi };
}

export function swapUsage(sample: CgroupFigures | undefined, timestamp: string): SwapUsage | undefined {
  if (!sample) return { timestamp, swapUsageBytes: u64(0) };
  if (sample.swapUsageBytes === undefined) return undefined;
  return defined({ timestamp, swapUsageBytes: u64(sample.swapUsageBytes), swapAvailableBytes: u64(available(sample.swapLimitBytes, sample.swapUsageBytes)) });
}

/** `mountpoint` is the filesystem the layer is on, as ImageFsInfo names it (Docker's storage directory). */
export function filesystemUsage(usage: DiskUsage, mountpoint: string, timestamp: string): FilesystemUsage {
  return { timestamp, fsId: { mountpoint }, usedBytes: u64(usage.bytes), inodesUsed: u64(usage.inodes) };
}

/**
 * `make` once per object: a container's or pod's CRI attributes, which every stats call sends
 * for every container, come from the shim's object of one Docker document, which does not
 * change (the store makes a new object for a new document), so they are made once per object.
 */
export function oncePerObject<K extends object, V>(make: (key: K) => V): (key: K) => V {
  const made = new WeakMap<K, V>();
  return (key) => {
    let value = made.get(key);
    if (value === undefined) made.set(key, (value = make(key)));
    return value;
  };
}

export interface ContainerFigures {
  attributes: ContainerAttributes;
  /** Undefined when the container is not running. */
  sample: CgroupFigures | undefined;
  nanoCores: bigint | undefined;
  /** The writable layer as last measured, with when (nanoseconds): figures measured in the background keep their own time. */
  layer: { usage: DiskUsage; mountpoint: string; timestamp: string } | undefined;
  timestamp: string;
}

export function containerStatsOf(f: ContainerFigures): ContainerStats {
  const stats: ContainerStats = {
    attributes: f.attributes,
    cpu: cpuUsage(f.sample, f.nanoCores, f.timestamp),
    memory: memoryUsage(f.sample, f.timestamp),
  };
  const swap = swapUsage(f.sample, f.timestamp);
  if (swap) stats.swap = swap;
  const io = ioUsage(f.sample, f.timestamp);
  if (io) stats.io = io;
  if (f.layer) stats.writableLayer = filesystemUsage(f.layer.usage, f.layer.mountpoint, f.layer.timestamp);
  return stats;
}

function interfaceUsage(c: InterfaceCounters): NetworkInterfaceUsage {
  return { name: c.name, rxBytes: u64(c.rxBytes), rxErrors: u64(c.rxErrors), txBytes: u64(c.txBytes), txErrors: u64(c.txErrors) };
}

export function networkUsage(interfaces: readonly InterfaceCounters[], timestamp: string): NetworkUsage {
  const all = interfaces.map(interfaceUsage);
  const usage: NetworkUsage = { timestamp, interfaces: all };
  const def = all.find((i) => i.name === DEFAULT_INTERFACE);
  if (def) usage.defaultInterface = def;
  return usage;
}

/** The figures that add up across cgroups. */
type SummedKey = { [K in keyof CgroupFigures]-?: NonNullable<CgroupFigures[K]> extends bigint ? K : never }[keyof CgroupFigures];

/** A pod's figures are its members' added up (the pause container and every running container). */
export function sumFigures(samples: readonly CgroupFigures[]): CgroupFigures | undefined {
  if (samples.length === 0) return undefined;
  const total: CgroupFigures = {};
  const keys: Array<SummedKey> = ['cpuUsageNs', 'memoryUsageBytes', 'workingSetBytes', 'rssBytes', 'pageFaults', 'majorPageFaults', 'processCount', 'swapUsageBytes'];
  for (const key of keys) {
    for (const s of samples) {
      const v = s[key];
      if (v !== undefined) total[key] = (total[key] ?? 0n) + v;
    }
  }
  // Limits do not add up: a pod-level "available" would need the pod cgroup's own limit; nor do
  // stall times (members stall at the same moments): a pod's PSI is its own cgroup's only.
  return total;
}
