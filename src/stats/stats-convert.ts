// Samples and counters as CRI's stats messages. Pure. A figure nobody measured is left out
// rather than reported as zero, except for a container that is not running, whose usage is
// zero by definition.
import type {
  ContainerAttributes,
  ContainerStats,
  CpuUsage,
  FilesystemUsage,
  MemoryUsage,
  NetworkInterfaceUsage,
  NetworkUsage,
  SwapUsage,
} from '../cri/types';
import type { DiskUsage } from '../util/disk-usage';
import { u64 } from '../cri/u64';
import { DEFAULT_INTERFACE, type InterfaceCounters } from '../cgroups/net-dev';
import type { CgroupSample } from './cgroup-sample';

function defined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as Array<keyof T>) if (o[k] === undefined) delete o[k];
  return o;
}

export function cpuUsage(sample: CgroupSample | undefined, nanoCores: bigint | undefined, timestamp: string): CpuUsage {
  if (!sample) return { timestamp, usageCoreNanoSeconds: u64(0), usageNanoCores: u64(0) };
  return defined({ timestamp, usageCoreNanoSeconds: u64(sample.cpuUsageNs), usageNanoCores: u64(nanoCores) });
}

export function memoryUsage(sample: CgroupSample | undefined, timestamp: string): MemoryUsage {
  if (!sample) return { timestamp, workingSetBytes: u64(0), usageBytes: u64(0), rssBytes: u64(0) };
  return defined({
    timestamp,
    workingSetBytes: u64(sample.workingSetBytes),
    availableBytes: u64(sample.availableBytes),
    usageBytes: u64(sample.memoryUsageBytes),
    rssBytes: u64(sample.rssBytes),
    pageFaults: u64(sample.pageFaults),
    majorPageFaults: u64(sample.majorPageFaults),
  });
}

export function swapUsage(sample: CgroupSample | undefined, timestamp: string): SwapUsage | undefined {
  if (!sample) return { timestamp, swapUsageBytes: u64(0) };
  if (sample.swapUsageBytes === undefined) return undefined;
  return defined({ timestamp, swapUsageBytes: u64(sample.swapUsageBytes), swapAvailableBytes: u64(sample.swapAvailableBytes) });
}

/** `mountpoint` is the filesystem the layer is on, as ImageFsInfo names it (Docker's storage directory). */
export function filesystemUsage(usage: DiskUsage, mountpoint: string, timestamp: string): FilesystemUsage {
  return { timestamp, fsId: { mountpoint }, usedBytes: u64(usage.bytes), inodesUsed: u64(usage.inodes) };
}

export interface ContainerFigures {
  attributes: ContainerAttributes;
  /** Undefined when the container is not running. */
  sample: CgroupSample | undefined;
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

/** A pod's figures are its members' added up (the pause container and every running container). */
export function sumSamples(samples: readonly CgroupSample[]): CgroupSample | undefined {
  if (samples.length === 0) return undefined;
  const total: CgroupSample = {};
  const keys: Array<keyof CgroupSample> = ['cpuUsageNs', 'memoryUsageBytes', 'workingSetBytes', 'rssBytes', 'pageFaults', 'majorPageFaults', 'processCount', 'swapUsageBytes'];
  for (const key of keys) {
    for (const s of samples) {
      const v = s[key];
      if (v !== undefined) total[key] = (total[key] ?? 0n) + v;
    }
  }
  // Limits do not add up: a pod-level "available" would need the pod cgroup's own limit.
  return total;
}
