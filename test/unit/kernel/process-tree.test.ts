// The kill behind ExecSync's timeout: a process is signalled only while its PID still names the
// process that was walked (same start time), and an exec's process only when it is in the
// container's cgroup. Real processes spawned here stand in for an exec's tree; a made-up /proc
// for one of thousands, walked in bounded turns and taken only up to a cap.
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { readStat } from '../../../src/kernel/proc-stat';
import { killExecTree, killProcesses, PROCESSES_PER_TURN, processTree } from '../../../src/kernel/process-tree';
import { waitFor } from '../../support/poll';
import { tempDir } from '../../support/temp';

const spawned: ChildProcess[] = [];

/** A shell with two sleeping children; answers once all three are there. */
async function shellWithChildren(): Promise<{ shell: number; tree: number[] }> {
  const child = spawn('sh', ['-c', 'sleep 300 & sleep 300 & wait'], { stdio: 'ignore' });
  spawned.push(child);
  const shell = child.pid!;
  const tree = await waitFor('the shell and its two children', async () => {
    const pids = (await processTree(shell)).map((p) => p.pid);
    return pids.length === 3 ? pids : undefined;
  });
  return { shell, tree };
}

const alive = (pid: number): boolean => readStat(pid) !== undefined && !/^\S+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));

after(() => {
  for (const c of spawned) c.kill('SIGKILL');
});

describe('process tree', () => {
  it('reads the parent and start time from stat, whatever the command name holds', () => {
    const dir = tempDir('proc');
    try {
      fs.mkdirSync(path.join(dir, '7'));
      // 52 fields in all; field 22 (start time) is 4242.
      const rest = ['S', '1', ...Array.from({ length: 17 }, () => '0'), '4242', ...Array.from({ length: 30 }, () => '0')];
      fs.writeFileSync(path.join(dir, '7', 'stat'), `7 (a) b (c) ${rest.join(' ')}\n`);
      assert.deepEqual(readStat(7, dir), { ppid: 1, startTime: '4242' });
      assert.equal(readStat(8, dir), undefined);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('walks a process and its children with their start times', async () => {
    const { shell, tree } = await shellWithChildren();
    assert.equal(tree[0], shell);
    for (const p of await processTree(shell)) assert.equal(p.startTime, readStat(p.pid)!.startTime);
  });

  it('leaves alone a PID that names another process than the one walked', async () => {
    const { tree } = await shellWithChildren();
    const sleeper = tree[1]!;
    // The same PID with another start time: what a PID reused after the walk looks like.
    assert.equal(await killProcesses([{ pid: sleeper, startTime: String(Number(readStat(sleeper)!.startTime) + 1) }]), 0);
    assert.ok(alive(sleeper));
    assert.equal(await killProcesses([{ pid: sleeper, startTime: readStat(sleeper)!.startTime }]), 1);
    await waitFor('the sleeper to die', () => !alive(sleeper));
  });

  it("kills an exec's tree only when its process is in the container's cgroup", async () => {
    const { shell, tree } = await shellWithChildren();
    assert.equal(await killExecTree(shell, 'f'.repeat(64)), 0);
    assert.ok(tree.every(alive));
    // Whatever the cgroup path names stands in for the container ID here.
    const cgroup = fs.readFileSync(`/proc/${shell}/cgroup`, 'utf8').trim().split('\n')[0]!;
    assert.equal(await killExecTree(shell, cgroup), 3);
    await waitFor('the tree to die', () => !tree.some(alive));
  });

  it('walks thousands of processes in turns, not one stretch of reads, and takes at most the limit', async () => {
    const dir = tempDir('proc');
    try {
      // PID 2 with 2,000 children (PIDs 3 ...), as a fork bomb in a container leaves them; each
      // of those is walked in turn for children of its own.
      const children = Array.from({ length: 2_000 }, (_, i) => i + 3);
      const stat = (pid: number, ppid: number): void => {
        fs.mkdirSync(path.join(dir, String(pid), 'task', String(pid)), { recursive: true });
        const rest = ['S', String(ppid), ...Array.from({ length: 17 }, () => '0'), '100', ...Array.from({ length: 30 }, () => '0')];
        fs.writeFileSync(path.join(dir, String(pid), 'stat'), `${pid} (sh) ${rest.join(' ')}\n`);
        fs.writeFileSync(path.join(dir, String(pid), 'task', String(pid), 'children'), pid === 2 ? children.join(' ') : '');
      };
      stat(2, 1);
      for (const c of children) stat(c, 2);
      // Files read between two turns of the event loop, at most: every read of the made-up
      // /proc is counted, and a turn (an immediate queued anew each time) resets the count.
      let sinceTurn = 0;
      let most = 0;
      // The module itself (the walk's namespace import reads through to it), not this file's view.
      const nodeFs = require('node:fs') as { readFileSync: (file: string, options?: unknown) => string | Buffer };
      const readFileSync = nodeFs.readFileSync;
      nodeFs.readFileSync = (file, options) => {
        if (String(file).startsWith(dir)) most = Math.max(most, ++sinceTurn);
        return readFileSync(file, options);
      };
      let walking = true;
      const turn = (): void => {
        sinceTurn = 0;
        if (walking) setImmediate(turn);
      };
      setImmediate(turn);
      let tree;
      try {
        tree = await processTree(2, dir);
      } finally {
        walking = false;
        nodeFs.readFileSync = readFileSync;
      }
      assert.equal(tree.length, 2_001);
      // A process costs up to three reads (its stat, its children, its stat again).
      assert.ok(most <= 3 * PROCESSES_PER_TURN, `${most} files read in one turn of the event loop`);
      assert.equal((await processTree(2, dir, 500)).length, 500, 'the walk stops at its limit');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
