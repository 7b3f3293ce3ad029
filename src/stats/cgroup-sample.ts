// One reading of a cgroup's cumulative CPU time, memory and process count, straight from its
// files: no waiting for a second sample as Docker's stats endpoint does. Parsing is pure;
// `readCgroupSampleSync` does the file reads (through ./kernel-files.ts).
import type { CgroupDirs } from '../cgroups/paths';
import type { KernelFiles } from '../cgroups/kernel-files';
import { parseFlatKeyed, parseSingleValue, parsePids } from '../cgroups/parse';

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
}

/** v1 reports "no limit" as a huge page-rounded number; anything this large is no limit. */
const UNLIMITED = 1n << 62n;

/** The memory.stat and cpu.stat keys a sample uses. */
const V1_MEMORY_KEYS = new Set(['total_inactive_file', 'inactive_file', 'total_rss', 'rss', 'total_pgfault', 'pgfault', 'total_pgmajfault', 'pgmajfault']);
const V2_MEMORY_KEYS = new Set(['inactive_file', 'anon', 'pgfault', 'pgmajfault']);
const V2_CPU_KEYS = new Set(['usage_usec']);

function workingSet(usage: bigint | undefined, inactiveFile: bigint | undefined): bigint | undefined {
  if (usage === undefined) return undefined;
  const ws = usage - (inactiveFile ?? 0n);
  return ws < 0n ? 0n : ws;
}

function available(limit: bigint | undefined, ws: bigint | undefined): bigint | undefined {
  if (limit === undefined || ws === undefined || limit >= UNLIMITED) return undefined;
  return limit > ws ? limit - ws : 0n;
}

/** The raw file contents a v1 sample is made from (undefined: file missing). */
export interface V1Files {
  cpuacctUsage?: string;
  memoryUsage?: string;
  memoryLimit?: string;
  memoryStat?: string;
  pidsCurrent?: string;
  /** memory.memsw.usage_in_bytes: memory plus swap (absent when swap accounting is off). */
  memswUsage?: string;
  memswLimit?: string;
}

export function sampleFromV1(f: V1Files): CgroupSample {
  const stat = parseFlatKeyed(f.memoryStat ?? '', V1_MEMORY_KEYS);
  const usage = parseSingleValue(f.memoryUsage);
  // total_* include child cgroups, which a pod-level cgroup has.
  const ws = workingSet(usage, stat.get('total_inactive_file') ?? stat.get('inactive_file'));
  return prune({
    cpuUsageNs: parseSingleValue(f.cpuacctUsage),
    memoryUsageBytes: usage,
    workingSetBytes: ws,
    rssBytes: stat.get('total_rss') ?? stat.get('rss'),
    pageFaults: stat.get('total_pgfault') ?? stat.get('pgfault'),
    majorPageFaults: stat.get('total_pgmajfault') ?? stat.get('pgmajfault'),
    availableBytes: available(parseSingleValue(f.memoryLimit), ws),
    processCount: parseSingleValue(f.pidsCurrent),
    ...v1Swap(usage, parseSingleValue(f.memoryLimit), parseSingleValue(f.memswUsage), parseSingleValue(f.memswLimit)),
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

export interface V2Files {
  cpuStat?: string;
  memoryCurrent?: string;
  memoryMax?: string;
  memoryStat?: string;
  pidsCurrent?: string;
  swapCurrent?: string;
  swapMax?: string;
}

export function sampleFromV2(f: V2Files): CgroupSample {
  const cpu = parseFlatKeyed(f.cpuStat ?? '', V2_CPU_KEYS);
  const stat = parseFlatKeyed(f.memoryStat ?? '', V2_MEMORY_KEYS);
  const usage = parseSingleValue(f.memoryCurrent);
  const ws = workingSet(usage, stat.get('inactive_file'));
  const usec = cpu.get('usage_usec');
  return prune({
    cpuUsageNs: usec === undefined ? undefined : usec * 1000n,
    memoryUsageBytes: usage,
    workingSetBytes: ws,
    rssBytes: stat.get('anon'),
    pageFaults: stat.get('pgfault'),
    majorPageFaults: stat.get('pgmajfault'),
    availableBytes: available(parseSingleValue(f.memoryMax), ws),
    processCount: parseSingleValue(f.pidsCurrent),
    swapUsageBytes: parseSingleValue(f.swapCurrent),
    swapAvailableBytes: available(parseSingleValue(f.swapMax), parseSingleValue(f.swapCurrent)),
  });
}

function prune(s: CgroupSample): CgroupSample {
  const out: CgroupSample = {};
  for (const [k, v] of Object.entries(s) as Array<[keyof CgroupSample, bigint | undefined]>) if (v !== undefined) out[k] = v;
  return out;
}

/** Thrown when the cgroup is gone (the container stopped between listing and reading). */
export class CgroupGoneError extends Error {}

/** The files that may be missing on a host: read once in a live cgroup, then skipped if absent. */
const V1_OPTIONAL = ['pidsCurrent', 'memswUsage', 'memswLimit'] as const;
const V2_OPTIONAL = ['pidsCurrent', 'swapCurrent', 'swapMax'] as const;

/**
 * Reads one sample, through `files` and held open for `owner` (the container). A cgroup whose
 * directory is gone is CgroupGoneError; a file that cannot be read leaves its figures out.
 */
export function readCgroupSampleSync(dirs: CgroupDirs, files: KernelFiles, owner?: string): CgroupSample {
  if (dirs.version === 2) {
    const d = dirs.dir;
    const f: V2Files = { cpuStat: files.optional(d, 'cpu.stat', owner), memoryCurrent: files.optional(d, 'memory.current', owner) };
    if (f.cpuStat === undefined && f.memoryCurrent === undefined) throw new CgroupGoneError(`cgroup ${d} is gone`);
    f.memoryMax = files.optional(d, 'memory.max', owner);
    f.memoryStat = files.optional(d, 'memory.stat', owner);
    const names = { pidsCurrent: 'pids.current', swapCurrent: 'memory.swap.current', swapMax: 'memory.swap.max' };
    for (const key of V2_OPTIONAL) {
      f[key] = files.hostFile(d, names[key], owner);
    }
    return sampleFromV2(f);
  }
  const f: V1Files = {
    cpuacctUsage: files.optional(dirs.cpuacct, 'cpuacct.usage', owner),
    memoryUsage: files.optional(dirs.memory, 'memory.usage_in_bytes', owner),
  };
  if (f.cpuacctUsage === undefined && f.memoryUsage === undefined) throw new CgroupGoneError(`cgroup ${dirs.cpuacct ?? dirs.memory} is gone`);
  f.memoryLimit = files.optional(dirs.memory, 'memory.limit_in_bytes', owner);
  f.memoryStat = files.optional(dirs.memory, 'memory.stat', owner);
  const where = { pidsCurrent: [dirs.pids, 'pids.current'], memswUsage: [dirs.memory, 'memory.memsw.usage_in_bytes'], memswLimit: [dirs.memory, 'memory.memsw.limit_in_bytes'] } as const;
  for (const key of V1_OPTIONAL) {
    const [dir, name] = where[key];
    f[key] = files.hostFile(dir, name, owner);
  }
  return sampleFromV1(f);
}

/** The first process in the cgroup (for a pod: the pause process, whose network namespace is the pod's). */
export function firstProcessOf(dirs: CgroupDirs, files: KernelFiles, owner?: string): number | undefined {
  const dir = dirs.version === 2 ? dirs.dir : (dirs.pids ?? dirs.memory ?? dirs.cpuacct);
  const text = files.optional(dir, 'cgroup.procs', owner);
  return text === undefined ? undefined : parsePids(text)[0];
}
