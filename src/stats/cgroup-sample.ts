// One reading of a cgroup's cumulative CPU time, memory and process count, straight from its
// files: no waiting for a second sample as Docker's stats endpoint does. Parsing is pure;
// `readCgroupSample` does the file reads.
import * as fs from 'node:fs';
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

/** Why a cgroup file could not be read (other than its being absent). */
export type CgroupReadErrorHandler = (file: string, err: NodeJS.ErrnoException) => void;

/**
 * Reads cgroup and /proc files: kernel-generated, a few hundred bytes to a few KiB, never
 * waiting on a disk. fs.promises.readFile costs several thread-pool round trips and a fresh
 * 64 KiB buffer per file for these (they report size 0), which made a scrape of a few hundred
 * containers spend most of its CPU in allocation and GC; one synchronous open/read/close into
 * a reused buffer costs a small fraction of that. A file name found absent in a live cgroup
 * (memory.memsw.* without swap accounting, pids.current without the pids controller) is absent
 * in every cgroup of the host, so it is not looked for again: a failed open is an exception.
 */
export class CgroupFileReader {
  private readonly buffer = Buffer.allocUnsafe(64 * 1024);
  /** "<hierarchy>\0<file name>" pairs known to be absent on this host. */
  private readonly absent = new Set<string>();

  constructor(private readonly onError: CgroupReadErrorHandler = () => undefined) {}

  /** The file's text; undefined when it is absent, or unreadable (reported to onError). */
  read(file: string): string | undefined {
    let fd: number;
    try {
      fd = fs.openSync(file, 'r');
    } catch (err) {
      this.failed(file, err as NodeJS.ErrnoException);
      return undefined;
    }
    try {
      let length = 0;
      for (;;) {
        const n = fs.readSync(fd, this.buffer, length, this.buffer.length - length, null);
        if (n === 0) break;
        length += n;
        // A file larger than the buffer is not one of ours: what was read is all that is used.
        if (length === this.buffer.length) break;
      }
      return this.buffer.toString('utf8', 0, length);
    } catch (err) {
      this.failed(file, err as NodeJS.ErrnoException);
      return undefined;
    } finally {
      fs.closeSync(fd);
    }
  }

  /** `file` in `dir`, unless this host is known not to have it. */
  optional(dir: string | undefined, file: string): string | undefined {
    if (dir === undefined || this.absent.has(absentKey(dir, file))) return undefined;
    return this.read(path.join(dir, file));
  }

  /** Remembers that `file` is missing from a live cgroup in `dir`'s hierarchy. */
  markAbsent(dir: string | undefined, file: string, text: string | undefined): void {
    if (dir !== undefined && text === undefined) this.absent.add(absentKey(dir, file));
  }

  private failed(file: string, err: NodeJS.ErrnoException): void {
    if (err.code !== 'ENOENT') this.onError(file, err);
  }
}

/** The hierarchy is the first two path levels under the mount (/sys/fs/cgroup/memory, /sys/fs/cgroup). */
function absentKey(dir: string, file: string): string {
  const hierarchy = dir.split('/').slice(0, 5).join('/');
  return `${hierarchy}\0${file}`;
}

/** Thrown when the cgroup is gone (the container stopped between listing and reading). */
export class CgroupGoneError extends Error {}

/** The files that may be missing on a host: read once in a live cgroup, then skipped if absent. */
const V1_OPTIONAL = ['pidsCurrent', 'memswUsage', 'memswLimit'] as const;
const V2_OPTIONAL = ['pidsCurrent', 'swapCurrent', 'swapMax'] as const;

/**
 * Reads one sample. A cgroup whose directory is gone is CgroupGoneError; a file that cannot be
 * be read leaves its figures out.
 */
export function readCgroupSampleSync(dirs: CgroupDirs, reader: CgroupFileReader): CgroupSample {
  if (dirs.version === 2) {
    const d = dirs.dir;
    const f: V2Files = { cpuStat: reader.read(path.join(d, 'cpu.stat')), memoryCurrent: reader.read(path.join(d, 'memory.current')) };
    if (f.cpuStat === undefined && f.memoryCurrent === undefined) throw new CgroupGoneError(`cgroup ${d} is gone`);
    f.memoryMax = reader.read(path.join(d, 'memory.max'));
    f.memoryStat = reader.read(path.join(d, 'memory.stat'));
    const names = { pidsCurrent: 'pids.current', swapCurrent: 'memory.swap.current', swapMax: 'memory.swap.max' };
    for (const key of V2_OPTIONAL) {
      f[key] = reader.optional(d, names[key]);
      reader.markAbsent(d, names[key], f[key]);
    }
    return sampleFromV2(f);
  }
  const f: V1Files = {
    cpuacctUsage: reader.optional(dirs.cpuacct, 'cpuacct.usage'),
    memoryUsage: reader.optional(dirs.memory, 'memory.usage_in_bytes'),
  };
  if (f.cpuacctUsage === undefined && f.memoryUsage === undefined) throw new CgroupGoneError(`cgroup ${dirs.cpuacct ?? dirs.memory} is gone`);
  f.memoryLimit = reader.optional(dirs.memory, 'memory.limit_in_bytes');
  f.memoryStat = reader.optional(dirs.memory, 'memory.stat');
  const where = { pidsCurrent: [dirs.pids, 'pids.current'], memswUsage: [dirs.memory, 'memory.memsw.usage_in_bytes'], memswLimit: [dirs.memory, 'memory.memsw.limit_in_bytes'] } as const;
  for (const key of V1_OPTIONAL) {
    const [dir, name] = where[key];
    f[key] = reader.optional(dir, name);
    // Only a live cgroup tells that a file does not exist on this host.
    if (f.memoryUsage !== undefined || f.cpuacctUsage !== undefined) reader.markAbsent(dir, name, f[key]);
  }
  return sampleFromV1(f);
}

/** Reads one sample (see readCgroupSampleSync). */
export function readCgroupSample(dirs: CgroupDirs, reader: CgroupFileReader = new CgroupFileReader()): Promise<CgroupSample> {
  try {
    return Promise.resolve(readCgroupSampleSync(dirs, reader));
  } catch (err) {
    return Promise.reject(err);
  }
}

/** The first process in the cgroup (for a pod: the pause process, whose network namespace is the pod's). */
export function firstProcessOf(dirs: CgroupDirs, reader: CgroupFileReader = new CgroupFileReader()): Promise<number | undefined> {
  const dir = dirs.version === 2 ? dirs.dir : (dirs.pids ?? dirs.memory ?? dirs.cpuacct);
  const text = reader.optional(dir, 'cgroup.procs');
  const first = text?.split('\n').find((l) => /^\d+$/.test(l.trim()));
  return Promise.resolve(first === undefined ? undefined : Number(first));
}
