// One reading of a cgroup's cumulative CPU time, memory and process count, straight from its
// files: no waiting for a second sample as Docker's stats endpoint does. Parsing is pure;
// `readCgroupSample` does the file reads.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { CgroupDirs } from './cgroup-paths';

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

/** "key value" lines (memory.stat, cpu.stat) as a map. */
export function parseFlatKeyed(text: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const line of text.split('\n')) {
    const m = /^(\S+)\s+(\d+)$/.exec(line.trim());
    if (m) out.set(m[1]!, BigInt(m[2]!));
  }
  return out;
}

/** A file holding one number; "max" (v2's no-limit) and anything else unparsable are undefined. */
export function parseSingleValue(text: string | undefined): bigint | undefined {
  const t = text?.trim();
  return t !== undefined && /^\d+$/.test(t) ? BigInt(t) : undefined;
}

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
  const stat = parseFlatKeyed(f.memoryStat ?? '');
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
  const cpu = parseFlatKeyed(f.cpuStat ?? '');
  const stat = parseFlatKeyed(f.memoryStat ?? '');
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

async function readOptional(dir: string | undefined, file: string): Promise<string | undefined> {
  if (dir === undefined) return undefined;
  try {
    return await fs.readFile(path.join(dir, file), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Thrown when the cgroup is gone (the container stopped between listing and reading). */
export class CgroupGoneError extends Error {}

/** Reads one sample. A cgroup whose directory is gone is CgroupGoneError. */
export async function readCgroupSample(dirs: CgroupDirs): Promise<CgroupSample> {
  if (dirs.version === 2) {
    const [cpuStat, memoryCurrent, memoryMax, memoryStat, pidsCurrent, swapCurrent, swapMax] = await Promise.all(
      ['cpu.stat', 'memory.current', 'memory.max', 'memory.stat', 'pids.current', 'memory.swap.current', 'memory.swap.max'].map((f) =>
        readOptional(dirs.dir, f),
      ),
    );
    if (cpuStat === undefined && memoryCurrent === undefined) throw new CgroupGoneError(`cgroup ${dirs.dir} is gone`);
    return sampleFromV2({ cpuStat, memoryCurrent, memoryMax, memoryStat, pidsCurrent, swapCurrent, swapMax });
  }
  const [cpuacctUsage, memoryUsage, memoryLimit, memoryStat, pidsCurrent, memswUsage, memswLimit] = await Promise.all([
    readOptional(dirs.cpuacct, 'cpuacct.usage'),
    readOptional(dirs.memory, 'memory.usage_in_bytes'),
    readOptional(dirs.memory, 'memory.limit_in_bytes'),
    readOptional(dirs.memory, 'memory.stat'),
    readOptional(dirs.pids, 'pids.current'),
    readOptional(dirs.memory, 'memory.memsw.usage_in_bytes'),
    readOptional(dirs.memory, 'memory.memsw.limit_in_bytes'),
  ]);
  if (cpuacctUsage === undefined && memoryUsage === undefined) throw new CgroupGoneError(`cgroup ${dirs.cpuacct ?? dirs.memory} is gone`);
  return sampleFromV1({ cpuacctUsage, memoryUsage, memoryLimit, memoryStat, pidsCurrent, memswUsage, memswLimit });
}

/** The first process in the cgroup (for a pod: the pause process, whose network namespace is the pod's). */
export async function firstProcessOf(dirs: CgroupDirs): Promise<number | undefined> {
  const dir = dirs.version === 2 ? dirs.dir : (dirs.pids ?? dirs.memory ?? dirs.cpuacct);
  const text = await readOptional(dir, 'cgroup.procs');
  const first = text?.split('\n').find((l) => /^\d+$/.test(l.trim()));
  return first === undefined ? undefined : Number(first);
}
