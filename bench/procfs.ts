// What the benchmark reads from /proc: a process's CPU time and resident memory, and which
// process is dockerd. The parsers are pure; the readers are thin.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';

/**
 * utime + stime (clock ticks) from the text of /proc/<pid>/stat. The command name (field 2)
 * is in parentheses and may itself contain spaces or parentheses, so fields are counted from
 * the last ')'.
 */
export function cpuTicksFromStat(stat: string): number {
  const end = stat.lastIndexOf(')');
  if (end < 0) throw new Error('not a /proc/<pid>/stat line: no command name');
  // After ") " come fields 3 (state) onwards; utime and stime are fields 14 and 15.
  const fields = stat.slice(end + 2).trim().split(/\s+/);
  const utime = Number(fields[14 - 3]);
  const stime = Number(fields[15 - 3]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error('not a /proc/<pid>/stat line: no utime/stime');
  return utime + stime;
}

/** A kB field such as VmRSS or VmHWM from the text of /proc/<pid>/status, in bytes. */
export function memoryFieldFromStatus(status: string, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB$`, 'm').exec(status);
  if (!m) throw new Error(`no ${field} in /proc/<pid>/status`);
  return Number(m[1]) * 1024;
}

let ticksPerSecond: number | undefined;

/** The kernel's USER_HZ (getconf CLK_TCK), almost always 100. */
export function clockTicksPerSecond(): number {
  if (ticksPerSecond === undefined) {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`getconf CLK_TCK gave ${n}`);
    ticksPerSecond = n;
  }
  return ticksPerSecond;
}

/** CPU time (user + system) the process has used so far, in milliseconds. */
export function cpuMs(pid: number): number {
  return (cpuTicksFromStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')) * 1000) / clockTicksPerSecond();
}

/** Quiet: this many seconds in a row, each with at most QUIET_CPU_MS_PER_SECOND of the process's CPU (one clock tick). */
const QUIET_SECONDS = 3;
const QUIET_CPU_MS_PER_SECOND = 10;

/**
 * Waits until the process has been quiet (QUIET_SECONDS) or `deadlineMs` passed; the time
 * waited, and whether it got quiet. A fresh shim walks Docker's image store first
 * (src/storage: its main thread busy with directory reads for 20-30 s at 120,000 files), a
 * one-off of start-up that a figure of steady-state calls must not count.
 */
export async function untilQuiet(pid: number, deadlineMs: number): Promise<{ waitedMs: number; quiet: boolean }> {
  const start = Date.now();
  let quietSeconds = 0;
  let last = cpuMs(pid);
  while (quietSeconds < QUIET_SECONDS && Date.now() - start < deadlineMs) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = cpuMs(pid);
    quietSeconds = now - last <= QUIET_CPU_MS_PER_SECOND ? quietSeconds + 1 : 0;
    last = now;
  }
  return { waitedMs: Date.now() - start, quiet: quietSeconds >= QUIET_SECONDS };
}

/** The time on CPU (ns) from the text of /proc/<pid>/task/<tid>/schedstat ("<on cpu ns> <waiting ns> <slices>"). */
export function runNsFromSchedstat(schedstat: string): number {
  const ns = Number(schedstat.slice(0, schedstat.indexOf(' ')));
  if (!Number.isSafeInteger(ns) || ns < 0) throw new Error('not a schedstat line');
  return ns;
}

/**
 * CPU time (ms) the process's live threads have used so far, to the nanosecond: the sum of
 * their schedstat. /proc/<pid>/stat counts in clock ticks (10 ms), too coarse for a one-second
 * slot holding ~1 ms of calls: each slot's reading was off by up to a tick, which spread one
 * build's kubelet loop over 130-200 ms per 30 s. A thread that has exited is no longer counted,
 * so this is for processes whose threads live as long as they do (node's, Go's).
 */
export function preciseCpuMs(pid: number): number {
  let ns = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += runNsFromSchedstat(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8'));
    } catch {
      // The thread exited between the listing and the read.
    }
  }
  return ns / 1e6;
}

/**
 * The machine's busy CPU time, all CPUs together, in clock ticks, from the text of /proc/stat:
 * the first line's user, nice, system, irq and softirq (idle, iowait and steal are not ours to
 * spend; guest time is counted within user already).
 */
export function busyTicksFromProcStat(stat: string): number {
  const line = /^cpu\s+([\d\s]+)$/m.exec(stat);
  const t = line?.[1]!.trim().split(/\s+/).map(Number);
  if (!t || t.length < 7 || t.some((n) => !Number.isFinite(n))) throw new Error('not /proc/stat: no cpu line with 7 times');
  return t[0]! + t[1]! + t[2]! + t[5]! + t[6]!;
}

/** The machine's busy CPU time so far, all CPUs together, in milliseconds. */
export function machineBusyMs(): number {
  return (busyTicksFromProcStat(fs.readFileSync('/proc/stat', 'utf8')) * 1000) / clockTicksPerSecond();
}

export function memoryBytes(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  return memoryFieldFromStatus(fs.readFileSync(`/proc/${pid}/status`, 'utf8'), field);
}

/** Resets the process's peak (VmHWM) to its present RSS (proc(5), clear_refs "5"), so the next peak read is a burst's own. */
export function resetPeakMemory(pid: number): void {
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/** dockerd's PID: from its pid file, else from pidof; checked against /proc/<pid>/comm. */
export function dockerdPid(): number {
  const candidates: string[] = [];
  try {
    candidates.push(fs.readFileSync('/var/run/docker.pid', 'utf8').trim());
  } catch {
    // No pid file: dockerd may have been started with another --pidfile.
  }
  try {
    candidates.push(...execFileSync('pidof', ['dockerd'], { encoding: 'utf8' }).trim().split(/\s+/));
  } catch {
    // pidof exits 1 when nothing matches.
  }
  for (const c of candidates) {
    const pid = Number(c);
    if (!Number.isSafeInteger(pid) || pid <= 0) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'dockerd') return pid;
    } catch {
      // Stale pid file.
    }
  }
  throw new Error('cannot find dockerd (no /var/run/docker.pid, and pidof dockerd found nothing): the CPU figures need it');
}

/** MemAvailable from the text of /proc/meminfo, in bytes: what the kernel can give without swapping. */
export function memAvailableFromMeminfo(meminfo: string): number {
  const m = /^MemAvailable:\s+(\d+)\s+kB$/m.exec(meminfo);
  if (!m) throw new Error('no MemAvailable in /proc/meminfo');
  return Number(m[1]) * 1024;
}

export function memAvailableBytes(): number {
  return memAvailableFromMeminfo(fs.readFileSync('/proc/meminfo', 'utf8'));
}

/**
 * Inode → bound path of every unix socket in the text of /proc/net/unix ('' for one with no
 * path: a client's end of a connection). A server's accepted connections show its path too.
 */
export function unixSocketPaths(netUnix: string): Map<number, string> {
  const out = new Map<number, string>();
  // Num RefCount Protocol Flags Type St Inode [Path]
  for (const line of netUnix.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 7) continue;
    const inode = Number(fields[6]);
    if (Number.isSafeInteger(inode)) out.set(inode, fields.slice(7).join(' '));
  }
  return out;
}

/** What a process holds open, by kind of file. */
export interface OpenFiles {
  fds: number;
  sockets: number;
  /** Unix sockets bound to no path: a process's own client connections (for the shim: to Docker). */
  unixUnbound: number;
  /** inotify instances (each a watcher: dockerd's log followers use one each while the user's limit lasts). */
  inotify: number;
}

/** Counts `pid`'s open files from its /proc/<pid>/fd link targets and /proc/net/unix. Pure. */
export function classifyOpenFiles(linkTargets: readonly string[], unixPaths: ReadonlyMap<number, string>): OpenFiles {
  const out: OpenFiles = { fds: linkTargets.length, sockets: 0, unixUnbound: 0, inotify: 0 };
  for (const target of linkTargets) {
    const socket = /^socket:\[(\d+)\]$/.exec(target);
    if (socket) {
      out.sockets++;
      if (unixPaths.get(Number(socket[1])) === '') out.unixUnbound++;
    } else if (target === 'anon_inode:inotify') {
      out.inotify++;
    }
  }
  return out;
}

/** Where each of the process's descriptors points (/proc/<pid>/fd's links). */
export function descriptorTargets(pid: number): string[] {
  const dir = `/proc/${pid}/fd`;
  const targets: string[] = [];
  for (const fd of fs.readdirSync(dir)) {
    try {
      targets.push(fs.readlinkSync(`${dir}/${fd}`));
    } catch {
      // Closed between the listing and the read.
    }
  }
  return targets;
}

export function openFiles(pid: number): OpenFiles {
  return classifyOpenFiles(descriptorTargets(pid), unixSocketPaths(fs.readFileSync('/proc/net/unix', 'utf8')));
}

/** Threads of a process (its /proc/<pid>/task entries). */
export function threadCount(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/task`).length;
}

/** Threads on the whole machine, from the text of /proc/loadavg ("0.1 0.2 0.3 2/345 678"). */
export function tasksFromLoadavg(loadavg: string): number {
  const m = /^\S+ \S+ \S+ \d+\/(\d+) /.exec(loadavg);
  if (!m) throw new Error('not a /proc/loadavg line');
  return Number(m[1]);
}

/** Threads running on the machine and the most there may be (kernel.pid_max bounds both PIDs and threads). */
export function taskHeadroom(): { tasks: number; max: number } {
  const max = Math.min(
    Number(fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8')),
    Number(fs.readFileSync('/proc/sys/kernel/threads-max', 'utf8')),
  );
  return { tasks: tasksFromLoadavg(fs.readFileSync('/proc/loadavg', 'utf8')), max };
}
