// A cgroup's files (v1 or v2) as one set of figures: the one place that says what working set,
// RSS, swap, page faults, the process count and the limits are. The stats (../stats) and the
// metrics (../pod-metrics) map these figures to their messages, as containerd derives both
// answers from one metrics value. Computing is pure; `readCgroupFigures` reads the files
// through the cgroup reader (./reader.ts).
import { cpuUsageNs, parseBlkio, parseFlatKeyed, parseIoStat, parsePressure, parseSingleValue, PRESSURE_FILES, type BlockIoEntry, type CgroupFiles, type Pressure } from './parse';
import type { CgroupDirs } from './paths';
import type { CgroupReader } from './reader';
import { defined } from '../util/defined';

/** A limit as the kernel states it: a number, or none (v2's "max", v1's huge page-rounded number). */
export type Limit = bigint | 'unlimited';

/** Every figure is left out, never 0, when the file it comes from was not read or lacks it. */
export interface CgroupFigures {
  /** Cumulative CPU time, nanoseconds; and its user and system parts. */
  cpuUsageNs?: bigint;
  cpuUserNs?: bigint;
  cpuSystemNs?: bigint;
  /** CFS bandwidth control: periods elapsed, periods throttled, time throttled (ns). */
  cfsPeriods?: bigint;
  cfsThrottledPeriods?: bigint;
  cfsThrottledNs?: bigint;
  /** The CFS period and quota (µs; no quota: left out) and the CPU weight as v1 shares. */
  cpuPeriodUs?: bigint;
  cpuQuotaUs?: bigint;
  cpuShares?: bigint;
  memoryUsageBytes?: bigint;
  /** The highest usage seen (v1 max_usage_in_bytes, v2 memory.peak). */
  memoryPeakBytes?: bigint;
  /** Usage less inactive page cache: what the kernel cannot easily reclaim (kubelet evicts on it). */
  workingSetBytes?: bigint;
  /** Anonymous memory (v1 rss, v2 anon). */
  rssBytes?: bigint;
  /** Page cache (v1 cache, v2 file). */
  cacheBytes?: bigint;
  mappedFileBytes?: bigint;
  kernelBytes?: bigint;
  activeFileBytes?: bigint;
  inactiveFileBytes?: bigint;
  swapUsageBytes?: bigint;
  pageFaults?: bigint;
  majorPageFaults?: bigint;
  /** Times usage reached the limit (v1 memory.failcnt, v2 memory.events "max"). */
  memoryFailcnt?: bigint;
  oomKills?: bigint;
  /** pids.current: the tasks (threads) in the cgroup, the kernel's "number of processes". */
  processCount?: bigint;
  processLimit?: Limit;
  memoryLimitBytes?: Limit;
  /** v1's soft limit, v2's memory.low. */
  memoryReservationBytes?: Limit;
  /** Swap alone (v1's memsw limit less the memory limit). */
  swapLimitBytes?: Limit;
  /** Per device; left out when no block I/O file was read. */
  blockIo?: BlockIoEntry[];
  /** PSI, cgroup v2 only (v1 has no per-cgroup pressure files). */
  cpuPressure?: Pressure;
  memoryPressure?: Pressure;
  ioPressure?: Pressure;
}

const V1_CONTAINER = ['cpuacct.usage', 'memory.usage_in_bytes', 'memory.limit_in_bytes', 'memory.stat', 'memory.memsw.usage_in_bytes', 'memory.memsw.limit_in_bytes'] as const;
const V2_CONTAINER = [
  'cpu.stat', 'memory.current', 'memory.max', 'memory.stat', 'memory.swap.current', 'memory.swap.max',
  PRESSURE_FILES.cpu, PRESSURE_FILES.memory, PRESSURE_FILES.io,
] as const;
const V1_USAGE = [...V1_CONTAINER, 'pids.current'] as const;
const V2_USAGE = [...V2_CONTAINER, 'pids.current'] as const;

const V1_ALL = [
  ...V1_USAGE, 'cpuacct.usage_user', 'cpuacct.usage_sys', 'cpu.stat', 'cpu.cfs_period_us', 'cpu.cfs_quota_us', 'cpu.shares',
  'memory.max_usage_in_bytes', 'memory.failcnt', 'memory.kmem.usage_in_bytes', 'memory.oom_control', 'memory.soft_limit_in_bytes', 'pids.max',
  'blkio.throttle.io_service_bytes_recursive', 'blkio.throttle.io_serviced_recursive',
] as const;
const V2_ALL = [...V2_USAGE, 'cpu.max', 'cpu.weight', 'memory.peak', 'memory.events', 'memory.low', 'pids.max', 'io.stat'] as const;

/**
 * The files among `all`'s that say the container's limits and weight: they change only when its
 * resources are updated, so the metrics read them once per inspect document (../pod-metrics).
 */
const LIMIT_FILES = {
  1: ['memory.limit_in_bytes', 'memory.memsw.limit_in_bytes', 'memory.soft_limit_in_bytes', 'cpu.cfs_period_us', 'cpu.cfs_quota_us', 'cpu.shares', 'pids.max'],
  2: ['memory.max', 'memory.swap.max', 'memory.low', 'cpu.max', 'cpu.weight', 'pids.max'],
} as const;
const notALimit = (version: 1 | 2) => (name: string): boolean => !(LIMIT_FILES[version] as readonly string[]).includes(name);

/**
 * The files the figures are made from; a missing one leaves its figures out. `container`: CPU
 * time, memory and swap with their limits and PSI, what a ContainerStats message holds (kubelet
 * polls it for every container every few seconds, so no more files than that); `usage`: those
 * and the process count, which a pod's stats add; `all`: every figure; `measured`: all but the
 * limit files (LIMIT_FILES), for a caller that holds those.
 */
export const FIGURE_FILES = {
  container: { 1: V1_CONTAINER, 2: V2_CONTAINER },
  usage: { 1: V1_USAGE, 2: V2_USAGE },
  all: { 1: V1_ALL, 2: V2_ALL },
  measured: { 1: V1_ALL.filter(notALimit(1)), 2: V2_ALL.filter(notALimit(2)) },
} as const;

/** v1 writes "no limit" as a huge page-rounded number; anything this large is none. */
const V1_UNLIMITED = 1n << 62n;

/** The memory.stat keys the figures use (v1 has each also as total_<key>, child cgroups included). */
const V1_MEMORY_KEYS = ['inactive_file', 'active_file', 'rss', 'cache', 'mapped_file', 'pgfault', 'pgmajfault'];
const V1_MEMORY_STAT = new Set(V1_MEMORY_KEYS.flatMap((k) => [k, `total_${k}`]));
const V2_MEMORY_STAT = new Set(['inactive_file', 'active_file', 'anon', 'file', 'file_mapped', 'kernel', 'pgfault', 'pgmajfault']);
const V1_CPU_STAT = new Set(['nr_periods', 'nr_throttled', 'throttled_time']);
const V2_CPU_STAT = new Set(['user_usec', 'system_usec', 'nr_periods', 'nr_throttled', 'throttled_usec']);
const OOM_KILL = new Set(['oom_kill']);
const V2_MEMORY_EVENTS = new Set(['max', 'oom_kill']);

function v1Limit(text: string | undefined): Limit | undefined {
  const v = parseSingleValue(text);
  return v !== undefined && v >= V1_UNLIMITED ? 'unlimited' : v;
}

/** A v2 limit file (pids.max in v1 too): a number, or "max". */
function v2Limit(text: string | undefined): Limit | undefined {
  return text?.trim() === 'max' ? 'unlimited' : parseSingleValue(text);
}

/** a − b, never below 0; undefined without a. */
function minus(a: bigint | undefined, b: bigint | undefined): bigint | undefined {
  if (a === undefined) return undefined;
  return a > (b ?? 0n) ? a - (b ?? 0n) : 0n;
}

const times = (v: bigint | undefined, k: bigint): bigint | undefined => (v === undefined ? undefined : v * k);

/** cpu.weight (1-10000) back to v1 shares (2-262144), inverting the conversion runc applies. */
export function sharesFromWeight(weight: bigint): bigint {
  return 2n + ((weight - 1n) * 262142n) / 9999n;
}

/** v1 counts memory and swap together in memsw: swap's limit is the difference. */
function v1SwapLimit(memoryLimit: string | undefined, memswLimit: string | undefined): Limit | undefined {
  const memsw = v1Limit(memswLimit);
  if (memsw === 'unlimited') return memsw;
  const memory = parseSingleValue(memoryLimit);
  return memsw === undefined || memory === undefined ? undefined : minus(memsw, memory);
}

export function figuresFromV1(f: CgroupFiles): CgroupFigures {
  const cpu = parseFlatKeyed(f['cpu.stat'] ?? '', V1_CPU_STAT);
  const stat = parseFlatKeyed(f['memory.stat'] ?? '', V1_MEMORY_STAT);
  // total_* count child cgroups too, which a pod-level cgroup has.
  const fromStat = (key: string): bigint | undefined => stat.get(`total_${key}`) ?? stat.get(key);
  const usage = parseSingleValue(f['memory.usage_in_bytes']);
  const memsw = parseSingleValue(f['memory.memsw.usage_in_bytes']);
  const inactiveFile = fromStat('inactive_file');
  const quota = f['cpu.cfs_quota_us']?.trim();
  const blkioBytes = f['blkio.throttle.io_service_bytes_recursive'];
  const blkioOps = f['blkio.throttle.io_serviced_recursive'];
  return defined({
    cpuUsageNs: cpuUsageNs(f, 1),
    cpuUserNs: parseSingleValue(f['cpuacct.usage_user']),
    cpuSystemNs: parseSingleValue(f['cpuacct.usage_sys']),
    cfsPeriods: cpu.get('nr_periods'),
    cfsThrottledPeriods: cpu.get('nr_throttled'),
    cfsThrottledNs: cpu.get('throttled_time'),
    cpuPeriodUs: parseSingleValue(f['cpu.cfs_period_us']),
    // -1 is "no quota".
    cpuQuotaUs: parseSingleValue(quota),
    cpuShares: parseSingleValue(f['cpu.shares']),
    memoryUsageBytes: usage,
    memoryPeakBytes: parseSingleValue(f['memory.max_usage_in_bytes']),
    workingSetBytes: minus(usage, inactiveFile),
    rssBytes: fromStat('rss'),
    cacheBytes: fromStat('cache'),
    mappedFileBytes: fromStat('mapped_file'),
    kernelBytes: parseSingleValue(f['memory.kmem.usage_in_bytes']),
    activeFileBytes: fromStat('active_file'),
    inactiveFileBytes: inactiveFile,
    // memsw counts memory and swap together: swap is the difference.
    swapUsageBytes: usage === undefined || memsw === undefined ? undefined : minus(memsw, usage),
    pageFaults: fromStat('pgfault'),
    majorPageFaults: fromStat('pgmajfault'),
    memoryFailcnt: parseSingleValue(f['memory.failcnt']),
    oomKills: parseFlatKeyed(f['memory.oom_control'] ?? '', OOM_KILL).get('oom_kill'),
    processCount: parseSingleValue(f['pids.current']),
    processLimit: v2Limit(f['pids.max']),
    memoryLimitBytes: v1Limit(f['memory.limit_in_bytes']),
    memoryReservationBytes: v1Limit(f['memory.soft_limit_in_bytes']),
    swapLimitBytes: v1SwapLimit(f['memory.limit_in_bytes'], f['memory.memsw.limit_in_bytes']),
    blockIo: blkioBytes === undefined && blkioOps === undefined ? undefined : parseBlkio(blkioBytes, blkioOps),
  });
}

export function figuresFromV2(f: CgroupFiles): CgroupFigures {
  const cpu = parseFlatKeyed(f['cpu.stat'] ?? '', V2_CPU_STAT);
  const stat = parseFlatKeyed(f['memory.stat'] ?? '', V2_MEMORY_STAT);
  const events = parseFlatKeyed(f['memory.events'] ?? '', V2_MEMORY_EVENTS);
  const usage = parseSingleValue(f['memory.current']);
  const [quota, period] = (f['cpu.max'] ?? '').trim().split(/\s+/);
  const weight = parseSingleValue(f['cpu.weight']);
  const ioStat = f['io.stat'];
  return defined({
    cpuUsageNs: cpuUsageNs(f, 2),
    cpuUserNs: times(cpu.get('user_usec'), 1000n),
    cpuSystemNs: times(cpu.get('system_usec'), 1000n),
    cfsPeriods: cpu.get('nr_periods'),
    cfsThrottledPeriods: cpu.get('nr_throttled'),
    cfsThrottledNs: times(cpu.get('throttled_usec'), 1000n),
    cpuPeriodUs: parseSingleValue(period),
    // "max" is no quota.
    cpuQuotaUs: parseSingleValue(quota),
    cpuShares: weight === undefined ? undefined : sharesFromWeight(weight),
    memoryUsageBytes: usage,
    memoryPeakBytes: parseSingleValue(f['memory.peak']),
    workingSetBytes: minus(usage, stat.get('inactive_file')),
    rssBytes: stat.get('anon'),
    cacheBytes: stat.get('file'),
    mappedFileBytes: stat.get('file_mapped'),
    kernelBytes: stat.get('kernel'),
    activeFileBytes: stat.get('active_file'),
    inactiveFileBytes: stat.get('inactive_file'),
    swapUsageBytes: parseSingleValue(f['memory.swap.current']),
    pageFaults: stat.get('pgfault'),
    majorPageFaults: stat.get('pgmajfault'),
    // v2 has no failcnt; memory.events' "max" counts the same thing: usage reaching the limit.
    memoryFailcnt: events.get('max'),
    oomKills: events.get('oom_kill'),
    processCount: parseSingleValue(f['pids.current']),
    processLimit: v2Limit(f['pids.max']),
    memoryLimitBytes: v2Limit(f['memory.max']),
    // memory.low "max" (protect everything) is left out, as it always was.
    memoryReservationBytes: parseSingleValue(f['memory.low']),
    swapLimitBytes: v2Limit(f['memory.swap.max']),
    blockIo: ioStat === undefined ? undefined : parseIoStat(ioStat),
    cpuPressure: parsePressure(f[PRESSURE_FILES.cpu]),
    memoryPressure: parsePressure(f[PRESSURE_FILES.memory]),
    ioPressure: parsePressure(f[PRESSURE_FILES.io]),
  });
}

/**
 * The figures of the cgroup `dirs` from `which` files, kept open for `owner` (the container),
 * and from `known` files read before (readLimitFiles); undefined when the cgroup is gone (the
 * container stopped between the list and the read).
 */
export function readCgroupFigures(reader: CgroupReader, dirs: CgroupDirs, owner: string, which: keyof typeof FIGURE_FILES, known?: CgroupFiles): CgroupFigures | undefined {
  const read = reader.read(dirs, FIGURE_FILES[which][dirs.version], owner);
  if (!read) return undefined;
  const files = known ? { ...known, ...read } : read;
  return dirs.version === 1 ? figuresFromV1(files) : figuresFromV2(files);
}

/** The cgroup's limit files (LIMIT_FILES), read once and not kept open; undefined when the cgroup is gone. */
export function readLimitFiles(reader: CgroupReader, dirs: CgroupDirs): CgroupFiles | undefined {
  return reader.read(dirs, LIMIT_FILES[dirs.version], undefined);
}
