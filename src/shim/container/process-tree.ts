// Killing a process together with everything it started, by host PID. Docker has no API to
// stop an exec, so an ExecSync that times out is ended here (the shim runs in the host's PID
// namespace, where Docker reports exec PIDs).
import * as fs from 'node:fs';

/** The PID and all its descendants, parents first (from /proc/<pid>/task/<tid>/children). */
export function processTree(pid: number): number[] {
  const seen: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const p = queue.shift()!;
    if (seen.includes(p)) continue;
    seen.push(p);
    let tasks: string[] = [];
    try {
      tasks = fs.readdirSync(`/proc/${p}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        const children = fs.readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8').trim();
        for (const c of children.split(/\s+/)) if (/^\d+$/.test(c)) queue.push(Number(c));
      } catch {
        // The task ended meanwhile.
      }
    }
  }
  return seen;
}

/** SIGKILLs the tree; processes that are already gone are fine. Returns how many were signalled. */
export function killProcessTree(pid: number): number {
  if (!(pid > 1)) return 0;
  let killed = 0;
  for (const p of processTree(pid)) {
    try {
      process.kill(p, 'SIGKILL');
      killed++;
    } catch {
      // Already exited.
    }
  }
  return killed;
}
