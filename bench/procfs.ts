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

export function memoryBytes(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  return memoryFieldFromStatus(fs.readFileSync(`/proc/${pid}/status`, 'utf8'), field);
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
