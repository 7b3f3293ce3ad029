// /proc/<pid>/stat's parent and start time. The start time (field 22, clock ticks since boot)
// tells a process from a later one given the same PID: two processes with one PID cannot share it.
import * as fs from 'node:fs';

interface Stat {
  ppid: number;
  startTime: string;
}

/** The parent and start time from /proc/<pid>/stat; undefined when there is no such process. */
export function readStat(pid: number, procRoot = '/proc'): Stat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`${procRoot}/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Field 2 (the command name, in parentheses) may hold spaces and parentheses of its own.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): ppid is field 4, starttime field 22.
  const ppid = Number(fields[1]);
  const startTime = fields[19];
  if (!Number.isInteger(ppid) || startTime === undefined || !/^\d+$/.test(startTime)) return undefined;
  return { ppid, startTime };
}
