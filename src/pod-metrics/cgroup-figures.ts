// A container's cgroup files turned into the figures its metrics report. Pure: the caller
// reads the files (V1_FILES or V2_FILES) and passes their text keyed by file name; a file
// that is missing or unreadable is undefined, and every figure it would give is left out.
import { cpuUsageNs, parseFlatKeyed, parsePressure, parseSingleValue, PRESSURE_FILES, type CgroupFiles, type Pressure } from '../cgroups/parse';

export interface BlockIoEntry {
  major: number;
  minor: number;
  readBytes?: bigint;
  writeBytes?: bigint;
  reads?: bigint;
  writes?: bigint;
}

export interface CgroupFigures {
  cpuUsageNs?: bigint;
  cpuUserNs?: bigint;
  cpuSystemNs?: bigint;
  cfsPeriods?: bigint;
  cfsThrottledPeriods?: bigint;
  cfsThrottledNs?: bigint;
  memoryUsage?: bigint;
  memoryMaxUsage?: bigint;
  memoryWorkingSet?: bigint;
  memoryRss?: bigint;
  memoryCache?: bigint;
  memoryMappedFile?: bigint;
  memoryKernel?: bigint;
  memorySwap?: bigint;
  memoryFailcnt?: bigint;
  memoryActiveFile?: bigint;
  memoryInactiveFile?: bigint;
  pgfault?: bigint;
  pgmajfault?: bigint;
  oomKills?: bigint;
  /** Tasks (threads) in the cgroup, from the pids controller. */
  threads?: bigint;
  /** 0 when unlimited. */
  threadsMax?: bigint;
  specCpuPeriod?: bigint;
  specCpuQuota?: bigint;
  specCpuShares?: bigint;
  /** The limits are 0 when unlimited. */
  specMemoryLimit?: bigint;
  specMemoryReservation?: bigint;
  specMemorySwapLimit?: bigint;
  blockIo: BlockIoEntry[];
  /** PSI, cgroup v2 only (v1 has no per-cgroup pressure files): left out, never 0, where absent. */
  cpuPressure?: Pressure;
  memoryPressure?: Pressure;
  ioPressure?: Pressure;
}

export const V1_FILES = [
  'cpuacct.usage', 'cpuacct.usage_user', 'cpuacct.usage_sys',
  'cpu.stat', 'cpu.cfs_period_us', 'cpu.cfs_quota_us', 'cpu.shares',
  'memory.usage_in_bytes', 'memory.max_usage_in_bytes', 'memory.failcnt', 'memory.stat', 'memory.kmem.usage_in_bytes',
  'memory.memsw.usage_in_bytes', 'memory.oom_control', 'memory.limit_in_bytes', 'memory.soft_limit_in_bytes', 'memory.memsw.limit_in_bytes',
  'pids.current', 'pids.max',
  'blkio.throttle.io_service_bytes_recursive', 'blkio.throttle.io_serviced_recursive',
] as const;

export const V2_FILES = [
  'cpu.stat', 'cpu.max', 'cpu.weight',
  'memory.current', 'memory.peak', 'memory.stat', 'memory.swap.current', 'memory.events', 'memory.max', 'memory.low', 'memory.swap.max',
  'pids.current', 'pids.max',
  'io.stat',
  PRESSURE_FILES.cpu, PRESSURE_FILES.memory, PRESSURE_FILES.io,
] as const;

/** v1 writes "no limit" as a huge page-rounded number. */
const V1_UNLIMITED = 1n << 62n;

const v1Limit = (v: bigint | undefined): bigint | undefined => (v === undefined ? undefined : v >= V1_UNLIMITED ? 0n : v);

/** A v2 limit file: a number, or "max" (no limit, reported as 0). */
export function v2Limit(text: string | undefined): bigint | undefined {
  const t = text?.trim();
  if (t === 'max') return 0n;
  return parseSingleValue(t);
}

const minus = (a: bigint | undefined, b: bigint | undefined): bigint | undefined => (a === undefined ? undefined : a > (b ?? 0n) ? a - (b ?? 0n) : 0n);
const times = (v: bigint | undefined, k: bigint): bigint | undefined => (v === undefined ? undefined : v * k);

/** blkio's "<major>:<minor> <Op> <value>" lines (Read, Write, Sync, Async, Discard, Total) by device. */
export function parseBlkio(bytesText: string | undefined, opsText: string | undefined): BlockIoEntry[] {
  const devices = new Map<string, BlockIoEntry>();
  const add = (text: string | undefined, read: 'readBytes' | 'reads', write: 'writeBytes' | 'writes'): void => {
    for (const line of (text ?? '').split('\n')) {
      const m = /^(\d+):(\d+)\s+(\w+)\s+(\d+)$/.exec(line.trim());
      if (!m || (m[3] !== 'Read' && m[3] !== 'Write')) continue;
      const key = `${m[1]}:${m[2]}`;
      const entry = devices.get(key) ?? { major: Number(m[1]), minor: Number(m[2]) };
      entry[m[3] === 'Read' ? read : write] = BigInt(m[4]!);
      devices.set(key, entry);
    }
  };
  add(bytesText, 'readBytes', 'writeBytes');
  add(opsText, 'reads', 'writes');
  return [...devices.values()];
}

/** v2's io.stat: "<major>:<minor> rbytes=N wbytes=N rios=N wios=N ..." per device. */
export function parseIoStat(text: string | undefined): BlockIoEntry[] {
  const out: BlockIoEntry[] = [];
  for (const line of (text ?? '').split('\n')) {
    const [device, ...pairs] = line.trim().split(/\s+/);
    const m = /^(\d+):(\d+)$/.exec(device ?? '');
    if (!m) continue;
    const kv = new Map(pairs.map((p) => p.split('=') as [string, string]).filter(([, v]) => /^\d+$/.test(v ?? '')).map(([k, v]) => [k, BigInt(v)]));
    out.push({ major: Number(m[1]), minor: Number(m[2]), readBytes: kv.get('rbytes'), writeBytes: kv.get('wbytes'), reads: kv.get('rios'), writes: kv.get('wios') });
  }
  return out;
}

export function figuresFromV1(f: CgroupFiles): CgroupFigures {
  const cpu = parseFlatKeyed(f['cpu.stat'] ?? '');
  const stat = parseFlatKeyed(f['memory.stat'] ?? '');
  const oom = parseFlatKeyed(f['memory.oom_control'] ?? '');
  const usage = parseSingleValue(f['memory.usage_in_bytes']);
  const memsw = parseSingleValue(f['memory.memsw.usage_in_bytes']);
  // total_* count child cgroups too; a container's cgroup rarely has any, but they are its own.
  const fromStat = (key: string): bigint | undefined => stat.get(`total_${key}`) ?? stat.get(key);
  const inactiveFile = fromStat('inactive_file');
  const quota = f['cpu.cfs_quota_us']?.trim();
  return {
    cpuUsageNs: cpuUsageNs(f, 1),
    cpuUserNs: parseSingleValue(f['cpuacct.usage_user']),
    cpuSystemNs: parseSingleValue(f['cpuacct.usage_sys']),
    cfsPeriods: cpu.get('nr_periods'),
    cfsThrottledPeriods: cpu.get('nr_throttled'),
    cfsThrottledNs: cpu.get('throttled_time'),
    memoryUsage: usage,
    memoryMaxUsage: parseSingleValue(f['memory.max_usage_in_bytes']),
    memoryWorkingSet: minus(usage, inactiveFile),
    memoryRss: fromStat('rss'),
    memoryCache: fromStat('cache'),
    memoryMappedFile: fromStat('mapped_file'),
    memoryKernel: parseSingleValue(f['memory.kmem.usage_in_bytes']),
    // memsw counts memory and swap together: swap is the difference.
    memorySwap: usage === undefined || memsw === undefined ? undefined : minus(memsw, usage),
    memoryFailcnt: parseSingleValue(f['memory.failcnt']),
    memoryActiveFile: fromStat('active_file'),
    memoryInactiveFile: inactiveFile,
    pgfault: fromStat('pgfault'),
    pgmajfault: fromStat('pgmajfault'),
    oomKills: oom.get('oom_kill'),
    threads: parseSingleValue(f['pids.current']),
    threadsMax: v2Limit(f['pids.max']),
    specCpuPeriod: parseSingleValue(f['cpu.cfs_period_us']),
    // -1 is "no quota": the metric is left out, as cAdvisor does.
    specCpuQuota: quota !== undefined && /^\d+$/.test(quota) ? BigInt(quota) : undefined,
    specCpuShares: parseSingleValue(f['cpu.shares']),
    specMemoryLimit: v1Limit(parseSingleValue(f['memory.limit_in_bytes'])),
    specMemoryReservation: v1Limit(parseSingleValue(f['memory.soft_limit_in_bytes'])),
    specMemorySwapLimit: v1Limit(parseSingleValue(f['memory.memsw.limit_in_bytes'])),
    blockIo: parseBlkio(f['blkio.throttle.io_service_bytes_recursive'], f['blkio.throttle.io_serviced_recursive']),
  };
}

/** cpu.weight (1-10000) back to v1 shares (2-262144), inverting the conversion runc applies. */
export function sharesFromWeight(weight: bigint): bigint {
  return 2n + ((weight - 1n) * 262142n) / 9999n;
}

/** v1's memory-plus-swap limit from v2's memory.max (0: none) and memory.swap.max (swap alone). */
function swapLimitV2(memoryMax: bigint | undefined, swapMax: string | undefined): bigint | undefined {
  if (memoryMax === undefined || swapMax === undefined) return undefined;
  if (memoryMax === 0n || swapMax === 'max') return 0n;
  const swap = parseSingleValue(swapMax);
  return swap === undefined ? undefined : memoryMax + swap;
}

export function figuresFromV2(f: CgroupFiles): CgroupFigures {
  const cpu = parseFlatKeyed(f['cpu.stat'] ?? '');
  const stat = parseFlatKeyed(f['memory.stat'] ?? '');
  const events = parseFlatKeyed(f['memory.events'] ?? '');
  const usage = parseSingleValue(f['memory.current']);
  const [quota, period] = (f['cpu.max'] ?? '').trim().split(/\s+/);
  const weight = parseSingleValue(f['cpu.weight']);
  const memoryMax = v2Limit(f['memory.max']);
  const swapText = f['memory.swap.max']?.trim();
  return {
    cpuUsageNs: times(cpu.get('usage_usec'), 1000n),
    cpuUserNs: times(cpu.get('user_usec'), 1000n),
    cpuSystemNs: times(cpu.get('system_usec'), 1000n),
    cfsPeriods: cpu.get('nr_periods'),
    cfsThrottledPeriods: cpu.get('nr_throttled'),
    cfsThrottledNs: times(cpu.get('throttled_usec'), 1000n),
    memoryUsage: usage,
    memoryMaxUsage: parseSingleValue(f['memory.peak']),
    memoryWorkingSet: minus(usage, stat.get('inactive_file')),
    memoryRss: stat.get('anon'),
    memoryCache: stat.get('file'),
    memoryMappedFile: stat.get('file_mapped'),
    memoryKernel: stat.get('kernel'),
    memorySwap: parseSingleValue(f['memory.swap.current']),
    // v2 has no failcnt; memory.events' "max" counts the same thing: usage reaching the limit.
    memoryFailcnt: events.get('max'),
    memoryActiveFile: stat.get('active_file'),
    memoryInactiveFile: stat.get('inactive_file'),
    pgfault: stat.get('pgfault'),
    pgmajfault: stat.get('pgmajfault'),
    oomKills: events.get('oom_kill'),
    threads: parseSingleValue(f['pids.current']),
    threadsMax: v2Limit(f['pids.max']),
    specCpuPeriod: parseSingleValue(period),
    specCpuQuota: parseSingleValue(quota),
    specCpuShares: weight === undefined ? undefined : sharesFromWeight(weight),
    specMemoryLimit: memoryMax,
    specMemoryReservation: parseSingleValue(f['memory.low']),
    // v2 limits swap alone; the metric is v1's memory-plus-swap limit, so both must be set.
    specMemorySwapLimit: swapLimitV2(memoryMax, swapText),
    blockIo: parseIoStat(f['io.stat']),
    cpuPressure: parsePressure(f[PRESSURE_FILES.cpu]),
    memoryPressure: parsePressure(f[PRESSURE_FILES.memory]),
    ioPressure: parsePressure(f[PRESSURE_FILES.io]),
  };
}
