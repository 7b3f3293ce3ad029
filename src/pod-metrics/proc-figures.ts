// What /proc says about a container's processes and the disks. Parsing is pure; the reads are
// in `readProcessFigures`. The pod's network counters are parsed by ../cgroups/net-dev.ts.
import * as fs from 'node:fs';

export interface ProcessFigures {
  processes: bigint;
  fileDescriptors: bigint;
  sockets: bigint;
}

/**
 * Counts the open descriptors of `pids` and how many of them are sockets (their link reads
 * "socket:[inode]"). A process that exits meanwhile simply counts nothing. Synchronous, as
 * the collector reads /proc (see metrics-collector.ts).
 */
export function readProcessFigures(procRoot: string, pids: readonly number[]): ProcessFigures {
  let fileDescriptors = 0;
  let sockets = 0;
  for (const pid of pids) {
    // Joined by hand: path.join would normalise again, for every descriptor, paths that are already normal.
    const fdDir = `${procRoot}/${pid}/fd`;
    let names: string[];
    try {
      names = fs.readdirSync(fdDir);
    } catch {
      continue;
    }
    fileDescriptors += names.length;
    for (const name of names) {
      try {
        if (fs.readlinkSync(`${fdDir}/${name}`).startsWith('socket:')) sockets++;
      } catch {
        // closed meanwhile
      }
    }
  }
  return { processes: BigInt(pids.length), fileDescriptors: BigInt(fileDescriptors), sockets: BigInt(sockets) };
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
