// The kernel's own word on OOM kills. Its log (/dev/kmsg) names the memory cgroup of every
// process the OOM killer ended ("oom-kill:...,task_memcg=/docker/<id>,task=sh,pid=..."), as
// cAdvisor's oomparser reads it. Docker's State.OOMKilled races the exit, and Docker 20.10 can
// miss its `oom` event altogether (seen: create, start, die, and the kernel's line), so a
// container that ended by SIGKILL with neither is looked up here. Read on demand and never
// blocking: the device is opened O_NONBLOCK once, and each look reads the records that came
// since (one record per read), up to EAGAIN.
import * as fs from 'node:fs';
import { errorMessage } from '../errors';
import type { Logger } from '../util/logger';

/** The container (64-hex ID in the task's memory cgroup path) a kernel log record says the OOM killer killed in. */
export function oomKilledContainerOf(record: string): string | undefined {
  const text = record.slice(record.indexOf(';') + 1);
  if (!text.startsWith('oom-kill:')) return undefined;
  return /(?:^oom-kill:|,)task_memcg=[^,]*?([0-9a-f]{64})/.exec(text)?.[1];
}

/** New records of the kernel log since the last call. */
interface KernelLogSource {
  read(): string[];
}

/** How many killed containers are remembered (the oldest are forgotten first). */
const REMEMBERED = 10_000;

export class KernelOomLog {
  private readonly killed = new Set<string>();

  constructor(private readonly source: KernelLogSource) {}

  /** Whether the kernel logged an OOM kill in the container's cgroup. */
  killedIn(containerId: string): boolean {
    for (const record of this.source.read()) {
      const id = oomKilledContainerOf(record);
      if (id === undefined) continue;
      this.killed.add(id);
      if (this.killed.size > REMEMBERED) this.killed.delete(this.killed.values().next().value!);
    }
    return this.killed.has(containerId);
  }
}

/** /dev/kmsg, read without blocking; a host that withholds it (no CAP_SYSLOG) gives nothing, said once. */
export function kmsgSource(log: Logger, path = '/dev/kmsg'): KernelLogSource {
  let fd: number | undefined;
  let unavailable = false;
  const buf = Buffer.alloc(8192);
  return {
    read(): string[] {
      if (unavailable) return [];
      const records: string[] = [];
      try {
        fd ??= fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
        for (;;) {
          let n: number;
          try {
            n = fs.readSync(fd, buf, 0, buf.length, null);
          } catch (err) {
            const code = (err as NodeJS.ErrnoException).code;
            if (code === 'EAGAIN') break; // nothing more for now
            if (code === 'EPIPE') continue; // records overwritten before we read them: go on from the oldest left
            throw err;
          }
          if (n === 0) break;
          records.push(buf.toString('utf8', 0, n));
        }
      } catch (err) {
        unavailable = true;
        if (fd !== undefined) fs.closeSync(fd);
        log.info({ path, error: errorMessage(err) }, 'cannot read the kernel log: OOM kills are known from Docker alone');
      }
      return records;
    },
  };
}
