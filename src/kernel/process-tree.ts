// Killing a process together with everything it started, by host PID. Docker has no API to
// stop an exec, so an ExecSync that times out is ended here (the shim runs in the host's PID
// namespace, where Docker reports exec PIDs).
//
// A PID names a process only until it is reaped; after that the kernel may hand the number to
// any new process. Node cannot open a pidfd (which would pin the process), so each process is
// identified by its PID and its start time (/proc/<pid>/stat field 22, clock ticks since boot,
// which two processes with one PID cannot share), and the start time is read again right before
// the signal, in the same synchronous turn: a PID reused between the walk and the kill is left
// alone. The exec's own process is only taken when it is in the container's cgroup, as Docker's
// inspect of the exec is a round trip older than anything read here, so its PID may already
// have changed hands before the walk.
//
// The reads are synchronous (/proc answers from memory, and a process's reads belong together),
// but a container can hold thousands of processes (4,000 took 182 ms of reads in one stretch):
// the walk and the kill yield to the event loop every PROCESSES_PER_TURN processes, and take at
// most MAX_TREE_PROCESSES.
import * as fs from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { readStat } from './proc-stat';

/** Processes walked (or signalled) between two yields to the event loop: ~3 ms of reads. */
export const PROCESSES_PER_TURN = 64;
/**
 * The most processes one walk takes: the container's pids limit, if any, bounds a tree anyway;
 * without one this bounds what a fork bomb costs the shim (memory, and turns of reads).
 */
const MAX_TREE_PROCESSES = 16_384;

/** A process as it was when the tree was walked. */
interface ProcessIdentity {
  pid: number;
  /** /proc/<pid>/stat field 22. */
  startTime: string;
}

function childrenOf(pid: number, procRoot: string): number[] {
  let tasks: string[];
  try {
    tasks = fs.readdirSync(`${procRoot}/${pid}/task`);
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const tid of tasks) {
    try {
      const children = fs.readFileSync(`${procRoot}/${pid}/task/${tid}/children`, 'utf8').trim();
      for (const c of children.split(/\s+/)) if (/^\d+$/.test(c)) out.push(Number(c));
    } catch {
      // The task ended meanwhile.
    }
  }
  return out;
}

/**
 * The process and its descendants (at most `limit`), parents first, each with its start time. A
 * child counts only when it named the parent as its own and the parent was still the same
 * process after its children were read (a PID may change hands at any point of the walk, the
 * yields included).
 */
export async function processTree(pid: number, procRoot = '/proc', limit = MAX_TREE_PROCESSES): Promise<ProcessIdentity[]> {
  const root = readStat(pid, procRoot);
  if (!root) return [];
  const seen = new Set<number>([pid]);
  const out: ProcessIdentity[] = [{ pid, startTime: root.startTime }];
  // Reads of a process's files since the walk began: its children's and its own stat each count.
  let read = 0;
  for (let i = 0; i < out.length && out.length < limit; i++) {
    if (++read % PROCESSES_PER_TURN === 0) await nextTurn();
    const parent = out[i]!;
    const children: ProcessIdentity[] = [];
    for (const child of childrenOf(parent.pid, procRoot)) {
      if (out.length + children.length >= limit) break;
      if (seen.has(child)) continue;
      if (++read % PROCESSES_PER_TURN === 0) await nextTurn();
      const stat = readStat(child, procRoot);
      if (stat?.ppid === parent.pid) children.push({ pid: child, startTime: stat.startTime });
    }
    if (readStat(parent.pid, procRoot)?.startTime !== parent.startTime) continue;
    for (const c of children) {
      seen.add(c.pid);
      out.push(c);
    }
  }
  return out;
}

/** Whether the process is in the container's cgroup (both cgroup drivers name it after the full ID). */
function inContainerCgroup(pid: number, containerId: string, procRoot = '/proc'): boolean {
  try {
    return fs.readFileSync(`${procRoot}/${pid}/cgroup`, 'utf8').includes(containerId);
  } catch {
    return false;
  }
}

/**
 * SIGKILLs each process that is still the one recorded (checked right before its signal, in the
 * same turn); returns how many were signalled.
 */
export async function killProcesses(processes: readonly ProcessIdentity[], procRoot = '/proc'): Promise<number> {
  let killed = 0;
  for (const [i, p] of processes.entries()) {
    if (i > 0 && i % PROCESSES_PER_TURN === 0) await nextTurn();
    if (!(p.pid > 1) || readStat(p.pid, procRoot)?.startTime !== p.startTime) continue;
    try {
      process.kill(p.pid, 'SIGKILL');
      killed++;
    } catch {
      // Exited after all.
    }
  }
  return killed;
}

/**
 * SIGKILLs an exec's process and its descendants, when `pid` is still a process of the
 * container; processes that are gone (or whose PID now names another process) are left alone.
 */
export async function killExecTree(pid: number, containerId: string, procRoot = '/proc'): Promise<number> {
  if (!(pid > 1)) return 0;
  const tree = await processTree(pid, procRoot);
  // Checked after the walk read the root's start time, and the kill checks that again: the
  // process checked here is the one walked and the one killed.
  if (tree.length === 0 || !inContainerCgroup(pid, containerId, procRoot)) return 0;
  return killProcesses(tree, procRoot);
}
