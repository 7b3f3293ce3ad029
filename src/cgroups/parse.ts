// The shapes the kernel writes its cgroup files in, parsed. Pure; ./figures.ts makes them the
// figures the stats and the metrics report.

/** Cgroup files' text by file name; undefined: missing, unreadable, or lacking on this host. */
export type CgroupFiles = Readonly<Record<string, string | undefined>>;

const DIGITS = /^\d+$/;

/**
 * "key value" lines (memory.stat, cpu.stat) as a map; with `wanted`, only those keys. A v1
 * memory.stat has some forty lines and is read for every container on every call, so the
 * lines are walked without splitting and only wanted values become BigInts.
 */
export function parseFlatKeyed(text: string, wanted?: ReadonlySet<string>): Map<string, bigint> {
  const out = new Map<string, bigint>();
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const space = text.indexOf(' ', start);
    if (space > start && space < end) {
      const key = text.slice(start, space);
      if (wanted === undefined || wanted.has(key)) {
        const value = text.slice(space + 1, end).trim();
        if (DIGITS.test(value)) out.set(key, BigInt(value));
      }
    }
    start = end + 1;
  }
  return out;
}

/** A file holding one number; "max" (v2's no-limit) and anything else unparsable are undefined. */
export function parseSingleValue(text: string | undefined): bigint | undefined {
  const t = text?.trim();
  return t !== undefined && DIGITS.test(t) ? BigInt(t) : undefined;
}

/** The PIDs listed in a cgroup.procs file. */
export function parsePids(text: string): number[] {
  return text.split('\n').filter((l) => DIGITS.test(l.trim())).map((l) => Number(l.trim()));
}

const V2_CPU_USAGE = new Set(['usage_usec']);

/**
 * The cgroup's cumulative CPU time in nanoseconds: v1's cpuacct.usage, v2's cpu.stat usage_usec
 * (microseconds). Undefined when the file is missing or says something else.
 */
export function cpuUsageNs(files: CgroupFiles, version: 1 | 2): bigint | undefined {
  if (version === 1) return parseSingleValue(files['cpuacct.usage']);
  const usec = parseFlatKeyed(files['cpu.stat'] ?? '', V2_CPU_USAGE).get('usage_usec');
  return usec === undefined ? undefined : usec * 1000n;
}

/**
 * One line of a PSI file: the share of wall time (%) some (or all) of the cgroup's tasks were
 * stalled over the last 10, 60 and 300 s, and the cumulative stall time in microseconds.
 */
export interface PressureLine {
  avg10: number;
  avg60: number;
  avg300: number;
  totalUsec: bigint;
}

/** A cgroup v2 <resource>.pressure file: "some" (at least one task stalled) and "full" (all were). */
export interface Pressure {
  some?: PressureLine;
  full?: PressureLine;
}

/** The PSI files of a cgroup v2 directory (the kernel has them with CONFIG_PSI, controllers or not). */
export const PRESSURE_FILES = { cpu: 'cpu.pressure', memory: 'memory.pressure', io: 'io.pressure' } as const;

const PRESSURE_LINE = /^(some|full) avg10=(\d+\.\d+) avg60=(\d+\.\d+) avg300=(\d+\.\d+) total=(\d+)$/;

/**
 * "some avg10=0.12 avg60=0.05 avg300=0.01 total=123456" lines (cgroup-v2.rst, "PSI"); undefined
 * when the file is missing or holds neither line, so a host without PSI reports none rather than 0.
 */
export function parsePressure(text: string | undefined): Pressure | undefined {
  if (text === undefined) return undefined;
  const out: Pressure = {};
  for (const line of text.split('\n')) {
    const m = PRESSURE_LINE.exec(line.trim());
    if (!m) continue;
    out[m[1] as 'some' | 'full'] = { avg10: Number(m[2]), avg60: Number(m[3]), avg300: Number(m[4]), totalUsec: BigInt(m[5]!) };
  }
  return out.some || out.full ? out : undefined;
}

/** One device's block I/O: bytes and operations each way. */
export interface BlockIoEntry {
  major: number;
  minor: number;
  readBytes?: bigint;
  writeBytes?: bigint;
  reads?: bigint;
  writes?: bigint;
}

/** blkio's "<major>:<minor> <Op> <value>" lines (Read, Write, Sync, Async, Discard, Total) by device. */
export function parseBlkio(bytesText: string | undefined, opsText: string | undefined): BlockIoEntry[] {
  const devices = new Map<string, BlockIoEntry>();
  const add = (text: string | undefined, read: 'readBytes' | 'reads', write: 'writeBytes' | 'writes'): void => {
    for (const line of (text ?? '').split('\n')) {
      // Four of every six lines are other operations (Sync, Async, Discard, Total): passed over before the pattern.
      if (!line.includes(' Read ') && !line.includes(' Write ')) continue;
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
