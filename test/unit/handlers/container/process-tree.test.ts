// The kill behind ExecSync's timeout: a process is signalled only while its PID still names the
// process that was walked (same start time), and an exec's process only when it is in the
// container's cgroup. Real processes spawned here stand in for an exec's tree.
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { killExecTree, killProcesses, processTree, readStat } from '../../../../src/handlers/container/process-tree';
import { waitFor } from '../../../support/poll';
import { tempDir } from '../../../support/temp';

const spawned: ChildProcess[] = [];

/** A shell with two sleeping children; answers once all three are there. */
async function shellWithChildren(): Promise<{ shell: number; tree: number[] }> {
  const child = spawn('sh', ['-c', 'sleep 300 & sleep 300 & wait'], { stdio: 'ignore' });
  spawned.push(child);
  const shell = child.pid!;
  const tree = await waitFor('the shell and its two children', () => {
    const pids = processTree(shell).map((p) => p.pid);
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
    for (const p of processTree(shell)) assert.equal(p.startTime, readStat(p.pid)!.startTime);
  });

  it('leaves alone a PID that names another process than the one walked', async () => {
    const { tree } = await shellWithChildren();
    const sleeper = tree[1]!;
    // The same PID with another start time: what a PID reused after the walk looks like.
    assert.equal(killProcesses([{ pid: sleeper, startTime: String(Number(readStat(sleeper)!.startTime) + 1) }]), 0);
    assert.ok(alive(sleeper));
    assert.equal(killProcesses([{ pid: sleeper, startTime: readStat(sleeper)!.startTime }]), 1);
    await waitFor('the sleeper to die', () => !alive(sleeper));
  });

  it("kills an exec's tree only when its process is in the container's cgroup", async () => {
    const { shell, tree } = await shellWithChildren();
    assert.equal(killExecTree(shell, 'f'.repeat(64)), 0);
    assert.ok(tree.every(alive));
    // Whatever the cgroup path names stands in for the container ID here.
    const cgroup = fs.readFileSync(`/proc/${shell}/cgroup`, 'utf8').trim().split('\n')[0]!;
    assert.equal(killExecTree(shell, cgroup), 3);
    await waitFor('the tree to die', () => !tree.some(alive));
  });
});
