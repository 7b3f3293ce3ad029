// OOM kills from cgroup v2's memory.events: the counter read from the fixture, followed through
// real inotify watches on files in a temp dir (the kernel notifies a cgroup file's watchers the
// same way: checked on this machine's real v2 hierarchy below), per run, and let go with the run.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { CgroupOomWatch, oomKillsOf, RESYNC_LOOK_MS, watchKernelFile, type RunSource } from '../../../src/cgroups/oom-watch';
import type { CgroupDirs } from '../../../src/cgroups/paths';
import type { ContainerInspect } from '../../../src/docker/types';
import { V2_FIXTURES } from '../../support/cgroup-v2-host';
import { waitFor } from '../../support/poll';
import { tempDir } from '../../support/temp';

const root = tempDir('oom-watch');
after(() => fs.rmSync(root, { recursive: true, force: true }));

const events = (oomKill: number) => `low 0\nhigh 0\nmax ${oomKill * 3}\noom ${oomKill}\noom_kill ${oomKill}\noom_group_kill 0\n`;

function cgroupDir(name: string, oomKill: number): string {
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'memory.events'), events(oomKill));
  return dir;
}

function doc(id: string, startedAt: string, running = true): ContainerInspect {
  return { Id: id, State: { Running: running, Pid: running ? 321 : 0, StartedAt: startedAt }, HostConfig: { CgroupParent: '' } } as unknown as ContainerInspect;
}

/** A reader that puts every container in `dirs[id]`. */
function readerOf(dirs: Record<string, CgroupDirs>) {
  return { dirsOf: (c: { id: string }) => dirs[c.id] };
}

describe('memory.events', () => {
  it('oom_kill as a v2 host writes it', () => {
    assert.equal(oomKillsOf(fs.readFileSync(path.join(V2_FIXTURES, 'container', 'memory.events'), 'utf8')), 2n);
    assert.equal(oomKillsOf('low 0\nhigh 0\n'), undefined);
  });
});

describe('CgroupOomWatch', () => {
  it('sees an OOM kill counted while the container runs, for that run only', async () => {
    const dir = cgroupDir('a', 0);
    const watch = new CgroupOomWatch(readerOf({ a: { version: 2, dir } }));
    after(() => watch.close());
    watch.observe('a', doc('a', 'run-1'));
    assert.equal(watch.size, 1);
    assert.equal(watch.oomKilledIn('a', 'run-1'), false);
    fs.writeFileSync(path.join(dir, 'memory.events'), events(1));
    await waitFor('the kill to be seen through the watch', () => watch.oomKilledIn('a', 'run-1'), { timeoutMs: 5_000 });
    assert.equal(watch.oomKilledIn('a', 'run-2'), false, 'another run of the container');
    // The run ends: let go, the kill still remembered for it.
    watch.observe('a', doc('a', 'run-1', false));
    assert.equal(watch.size, 0);
    assert.equal(watch.oomKilledIn('a', 'run-1'), true);
  });

  it('counts a kill made before the watch began, and none on cgroup v1', () => {
    const dir = cgroupDir('b', 2);
    const watch = new CgroupOomWatch(readerOf({ b: { version: 2, dir }, c: { version: 1, dirs: { memory: dir } } }));
    watch.observe('b', doc('b', 'run-1'));
    watch.observe('c', doc('c', 'run-1'));
    assert.equal(watch.oomKilledIn('b', 'run-1'), true);
    assert.equal(watch.oomKilledIn('c', 'run-1'), false);
    assert.equal(watch.size, 1, 'v1 is not followed');
    watch.close();
    assert.equal(watch.size, 0);
  });

  // A removed cgroup's files tell their watchers nothing (kernfs; seen on this 6.18 kernel: no
  // event after rmdir, then ENOENT), which is why the state cache's word lets a run go;
  // a file that goes on an ordinary filesystem does, and is let go at once.
  it('lets a file go when it is removed, and follows at most its limit', async () => {
    const dir = cgroupDir('d', 0);
    const watch = new CgroupOomWatch(readerOf({ d: { version: 2, dir }, e: { version: 2, dir: cgroupDir('e', 0) } }), watchKernelFile, 1);
    watch.observe('d', doc('d', 'run-1'));
    watch.observe('e', doc('e', 'run-1'));
    assert.equal(watch.size, 1, 'the limit');
    fs.rmSync(dir, { recursive: true });
    await waitFor('the removed cgroup to be let go', () => watch.size === 0, { timeoutMs: 5_000 });
    watch.observe('e', doc('e', 'run-1'));
    assert.equal(watch.size, 1, 'room again');
    watch.close();
  });

  it('follows the runs of a state source, and again after it lost and regained Docker', async () => {
    const dir = cgroupDir('f', 0);
    const dirG = cgroupDir('g', 0);
    let watcher: Parameters<RunSource['listen']>[0] | undefined;
    const docs = new Map<string, ContainerInspect>([['f', doc('f', 'run-1')]]);
    const source = {
      synced: true,
      containers: { values: () => docs.values() },
      listen: (w: Parameters<RunSource['listen']>[0]) => ((watcher = w), () => (watcher = undefined)),
    };
    const watch = new CgroupOomWatch(readerOf({ f: { version: 2, dir }, g: { version: 2, dir: dirG } }));
    after(() => watch.close());
    watch.followRuns(source);
    assert.equal(watch.size, 1, 'what the source holds');
    watcher!.containerChanged({ id: 'g', after: doc('g', 'run-1') });
    assert.equal(watch.size, 2, 'a change');
    // Docker lost: the source drops its watchers; a run that starts meanwhile is seen once it is synced again.
    source.synced = false;
    const lost = watcher!;
    watcher = undefined;
    lost.unsynced('Docker went away');
    fs.writeFileSync(path.join(dirG, 'memory.events'), events(1));
    docs.set('g', doc('g', 'run-2'));
    // f is removed meanwhile: its cgroup's removal tells the watch nothing, the resync does.
    docs.delete('f');
    source.synced = true;
    await waitFor('the watch to be back', () => watcher !== undefined, { timeoutMs: 5 * RESYNC_LOOK_MS });
    assert.equal(watch.oomKilledIn('g', 'run-2'), true);
    assert.equal(watch.size, 1, 'f let go');
  });
});

describe('the kernel notifies a v2 cgroup file\'s watchers', () => {
  const UNIFIED = '/sys/fs/cgroup/unified';
  const available = fs.existsSync(path.join(UNIFIED, 'cgroup.procs'));
  it('cgroup.events of a real cgroup, when a process enters it', { skip: available ? false : `${UNIFIED} (cgroup2) is absent on this machine` }, async (t) => {
    // memory.events and cgroup.events are both notified by the kernel (cgroup_file_notify); this
    // hierarchy has no memory controller, so the watch is shown on cgroup.events.
    const dir = path.join(UNIFIED, `cds-oom-test-${process.pid}-${Date.now()}`);
    fs.mkdirSync(dir);
    const child = spawn('sh', ['-c', 'read x'], { stdio: ['pipe', 'ignore', 'ignore'] });
    t.after(async () => {
      child.stdin!.end('\n');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
      await waitFor('the test cgroup to empty', () => fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').trim() === '', { timeoutMs: 5_000 });
      fs.rmdirSync(dir);
    });
    let notified = 0;
    const watch = watchKernelFile(path.join(dir, 'cgroup.events'), () => notified++);
    t.after(() => watch.close());
    assert.match(fs.readFileSync(path.join(dir, 'cgroup.events'), 'utf8'), /^populated 0$/m);
    fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(child.pid));
    await waitFor('a notification of cgroup.events', () => notified > 0, { timeoutMs: 5_000 });
    assert.match(fs.readFileSync(path.join(dir, 'cgroup.events'), 'utf8'), /^populated 1$/m);
  });
});
