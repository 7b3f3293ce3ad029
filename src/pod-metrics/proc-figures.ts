// What /proc says about a container's processes and its pod's network namespace. Parsing is
// pure; the reads are in `readProcessFigures`.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

/** The PIDs listed in a cgroup.procs file. */
export function parsePids(text: string): number[] {
  return text.split('\n').filter((l) => /^\d+$/.test(l.trim())).map((l) => Number(l.trim()));
}

export interface ProcessFigures {
  processes: bigint;
  fileDescriptors: bigint;
  sockets: bigint;
}

/**
 * Counts the open descriptors of `pids` and how many of them are sockets (their link reads
 * "socket:[inode]"). A process that exits meanwhile simply counts nothing.
 */
export async function readProcessFigures(procRoot: string, pids: readonly number[]): Promise<ProcessFigures> {
  const perProcess = await Promise.all(
    pids.map(async (pid) => {
      const fdDir = path.join(procRoot, String(pid), 'fd');
      let names: string[];
      try {
        names = await fs.readdir(fdDir);
      } catch {
        return { fds: 0, sockets: 0 };
      }
      const links = await Promise.all(names.map((n) => fs.readlink(path.join(fdDir, n)).catch(() => '')));
      return { fds: names.length, sockets: links.filter((l) => l.startsWith('socket:')).length };
    }),
  );
  return {
    processes: BigInt(pids.length),
    fileDescriptors: BigInt(perProcess.reduce((n, p) => n + p.fds, 0)),
    sockets: BigInt(perProcess.reduce((n, p) => n + p.sockets, 0)),
  };
}

/** One interface's counters from /proc/<pid>/net/dev. */
export interface InterfaceTotals {
  name: string;
  rxBytes: bigint;
  rxPackets: bigint;
  rxErrors: bigint;
  rxDropped: bigint;
  txBytes: bigint;
  txPackets: bigint;
  txErrors: bigint;
  txDropped: bigint;
}

/**
 * Every interface but loopback with all eight counters the metrics report (the stats RPCs'
 * parser, ../stats/net-dev.ts, keeps only bytes and errors).
 */
export function parseInterfaceTotals(text: string): InterfaceTotals[] {
  const out: InterfaceTotals[] = [];
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    const f = line.slice(colon + 1).trim().split(/\s+/);
    // Receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets errs drop ...
    if (name === '' || name === 'lo' || f.length < 16 || !f.every((x) => /^\d+$/.test(x))) continue;
    const n = f.map((x) => BigInt(x));
    out.push({ name, rxBytes: n[0]!, rxPackets: n[1]!, rxErrors: n[2]!, rxDropped: n[3]!, txBytes: n[8]!, txPackets: n[9]!, txErrors: n[10]!, txDropped: n[11]! });
  }
  return out;
}

/** /proc/partitions as "<major>:<minor>" → "/dev/<name>", so device labels name the disk as cAdvisor does. */
export function parsePartitions(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+)\s+(\d+)\s+\d+\s+(\S+)\s*$/.exec(line);
    if (m) out.set(`${m[1]}:${m[2]}`, `/dev/${m[3]}`);
  }
  return out;
}

/** A stat() dev number split as Linux encodes it (see makedev(3)). */
export function splitDev(dev: number): { major: number; minor: number } {
  const d = BigInt(dev);
  const major = Number(((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn));
  const minor = Number((d & 0xffn) | ((d >> 12n) & ~0xffn));
  return { major, minor };
}
