// One reading of a cgroup's cumulative CPU time, memory and process count, straight from its
// files: no waiting for a second sample as Docker's stats endpoint does. Parsing is pure;
// `readCgroupSample` reads the files through the cgroup reader (../cgroups/reader.ts).
import { cpuUsageNs, parseFlatKeyed, parsePressure, parseSingleValue, PRESSURE_FILES, type CgroupFiles, type Pressure } from '../cgroups/parse';
import type { CgroupDirs } from '../cgroups/paths';
import type { CgroupReader } from '../cgroups/reader';

export interface CgroupSample {
  /** Cumulative CPU time, nanoseconds. */
  cpuUsageNs?: bigint;
  memoryUsageBytes?: bigint;
  /** Usage less inactive page cache: what the kernel cannot easily reclaim (kubelet evicts on it). */
  workingSetBytes?: bigint;
  rssBytes?: bigint;
  pageFaults?: bigint;
  majorPageFaults?: bigint;
  /** Limit minus working set; undefined when there is no limit. */
  availableBytes?: bigint;
  processCount?: bigint;
  swapUsageBytes?: bigint;
  /** Swap limit minus swap used; undefined when there is no limit. */
  swapAvailableBytes?: bigint;
  /** PSI (cgroup v2 only: v1 has no per-cgroup pressure files). */
  cpuPressure?: Pressure;
  memoryPressure?: Pressure;
  ioPressure?: Pressure;
}

/** v1 reports "no limit" as a huge page-rounded number; anything this large is no limit. */
const UNLIMITED = 1n << 62n;

/** The memory.stat and cpu.stat keys a sample uses. */
const V1_MEMORY_KEYS = new Set(['total_inactive_file', 'inactive_file', 'total_rss', 'rss', 'total_pgfault', 'pgfault', 'total_pgmajfault', 'pgmajfault']);
const V2_MEMORY_KEYS = new Set(['inactive_file', 'anon', 'pgfault', 'pgmajfault']);

function workingSet(usage: bigint | undefined, inactiveFile: bigint | undefined): bigint | undefined {
  if (usage === undefined) return undefined;
  const ws = usage - (inactiveFile ?? 0n);
  return ws < 0n ? 0n : ws;
}

function available(limit: bigint | undefined, ws: bigint | undefined): bigint | undefined {
  if (limit === undefined || ws === undefined || limit >= UNLIMITED) return undefined;
  return limit > ws ? limit - ws : 0n;
}

/** The files a sample is made from; a missing one leaves its figures out. */
export const SAMPLE_FILES = {
  1: ['cpuacct.usage', 'memory.usage_in_bytes', 'memory.limit_in_bytes', 'memory.stat', 'pids.current', 'memory.memsw.usage_in_bytes', 'memory.memsw.limit_in_bytes'],
  2: [
    'cpu.stat', 'memory.current', 'memory.max', 'memory.stat', 'pids.current', 'memory.swap.current', 'memory.swap.max',
    PRESSURE_FILES.cpu, PRESSURE_FILES.memory, PRESSURE_FILES.io,
  ],
} as const;

export function sampleFromV1(f: CgroupFiles): CgroupSample {
  const stat = parseFlatKeyed(f['memory.stat'] ?? '', V1_MEMORY_KEYS);
  const usage = parseSingleValue(f['memory.usage_in_bytes']);
  const limit = parseSingleValue(f['memory.limit_in_bytes']);
  // total_* include child cgroups, which a pod-level cgroup has.
  const ws = workingSet(usage, stat.get('total_inactive_file') ?? stat.get('inactive_file'));
  return prune({
    cpuUsageNs: cpuUsageNs(f, 1),
    memoryUsageBytes: usage,
    workingSetBytes: ws,
    rssBytes: stat.get('total_rss') ?? stat.get('rss'),
    pageFaults: stat.get('total_pgfault') ?? stat.get('pgfault'),
    majorPageFaults: stat.get('total_pgmajfault') ?? stat.get('pgmajfault'),
    availableBytes: available(limit, ws),
    processCount: parseSingleValue(f['pids.current']),
    ...v1Swap(usage, limit, parseSingleValue(f['memory.memsw.usage_in_bytes']), parseSingleValue(f['memory.memsw.limit_in_bytes'])),
  });
}

/** v1 counts memory and swap together in memsw; swap is the difference, and so is its limit. */
function v1Swap(usage: bigint | undefined, limit: bigint | undefined, memsw: bigint | undefined, memswLimit: bigint | undefined): Pick<CgroupSample, 'swapUsageBytes' | 'swapAvailableBytes'> {
  if (usage === undefined || memsw === undefined) return {};
  const swap = memsw > usage ? memsw - usage : 0n;
  if (limit === undefined || memswLimit === undefined || memswLimit >= UNLIMITED) return { swapUsageBytes: swap };
  const swapLimit = memswLimit > limit ? memswLimit - limit : 0n;
  return { swapUsageBytes: swap, swapAvailableBytes: swapLimit > swap ? swapLimit - swap : 0n };
}

export function sampleFromV2(f: CgroupFiles): CgroupSample {
  const stat = parseFlatKeyed(f['memory.stat'] ?? '', V2_MEMORY_KEYS);
  const usage = parseSingleValue(f['memory.current']);
  const swap = parseSingleValue(f['memory.swap.current']);
  const ws = workingSet(usage, stat.get('inactive_file'));
  return prune({
    cpuUsageNs: cpuUsageNs(f, 2),
    memoryUsageBytes: usage,
    workingSetBytes: ws,
    rssBytes: stat.get('anon'),
    pageFaults: stat.get('pgfault'),
    majorPageFaults: stat.get('pgmajfault'),
    availableBytes: available(parseSingleValue(f['memory.max']), ws),
    processCount: parseSingleValue(f['pids.current']),
    swapUsageBytes: swap,
    swapAvailableBytes: available(parseSingleValue(f['memory.swap.max']), swap),
    cpuPressure: parsePressure(f[PRESSURE_FILES.cpu]),
    memoryPressure: parsePressure(f[PRESSURE_FILES.memory]),
    ioPressure: parsePressure(f[PRESSURE_FILES.io]),
  });
}

function prune(s: CgroupSample): CgroupSample {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) if (v !== undefined) out[k] = v;
  return out as CgroupSample;
}

/**
 * One sample of the cgroup `dirs`, its files kept open for `owner` (the container); undefined
 * when the cgroup is gone (the container stopped between the list and the read).
 */
export function readCgroupSample(reader: CgroupReader, dirs: CgroupDirs, owner: string): CgroupSample | undefined {
  const files = reader.read(dirs, SAMPLE_FILES[dirs.version], owner);
  return files && (dirs.version === 1 ? sampleFromV1(files) : sampleFromV2(files));
}
