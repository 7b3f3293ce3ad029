// CgroupReader over a made-up /proc and cgroup v2 tree: a container's directories from its
// process (once per process; a reused PID or an invisible process falls back to Docker's
// naming; a new PID is looked up afresh), a gone cgroup against a file the host lacks, what is
// held open and what is not, forgetting, and an unreadable file logged once; and the files closed
// as soon as the state cache (over the fake Docker) sees their container stop, restart or go.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { CgroupReader } from '../../../src/cgroups/reader';
import { DockerStateCache } from '../../../src/docker-cache/state-cache';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker } from '../../support/fake-docker';
import { inspectDoc, runningState } from '../../support/fixtures/docker-container';
import { waitFor } from '../../support/poll';
import { tempDir } from '../../support/temp';

const ID = 'c0'.repeat(32);
const OTHER = 'd1'.repeat(32);

describe('CgroupReader', () => {
  const roots: string[] = [];
  const readers: CgroupReader[] = [];
  after(() => {
    readers.forEach((r) => r.close());
    roots.forEach((r) => fs.rmSync(r, { recursive: true, force: true }));
  });
  const write = (p: string, text: string): void => {
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, text);
  };

  /** A v2 host: the container's scope by the systemd driver's naming, and elsewhere a second one. */
  function host(runs?: DockerStateCache) {
    const root = tempDir('cgroup-reader');
    roots.push(root);
    const proc = path.join(root, 'proc');
    const cg = path.join(root, 'cgroup');
    write(path.join(proc, 'self', 'mountinfo'), `29 23 0:26 / ${cg} rw - cgroup2 cgroup2 rw\n`);
    const scope = (slice: string, id: string): string => {
      const dir = path.join(cg, slice, `docker-${id}.scope`);
      write(path.join(dir, 'cpu.stat'), 'usage_usec 10\n');
      write(path.join(dir, 'memory.current'), '4096\n');
      write(path.join(dir, 'cgroup.procs'), '77\n');
      return dir;
    };
    const out: string[] = [];
    const log = pino({ level: 'debug' }, new Writable({ write: (chunk: Buffer, _enc, cb) => (out.push(chunk.toString()), cb()) }));
    const reader = new CgroupReader({ driver: 'systemd', log, procRoot: proc, runs });
    readers.push(reader);
    return { root, proc, cg, scope, reader, debugLines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
  }

  it('finds the directories from /proc/<pid>/cgroup, once per process', () => {
    const h = host();
    const dir = h.scope('moved.slice', ID);
    write(path.join(h.proc, '77', 'cgroup'), `0::/moved.slice/docker-${ID}.scope\n`);
    const c = { id: ID, pid: 77, cgroupParent: '' };
    assert.deepEqual(h.reader.dirsOf(c), { version: 2, dir });
    fs.rmSync(path.join(h.proc, '77'), { recursive: true });
    assert.deepEqual(h.reader.dirsOf(c), { version: 2, dir }, 'not read again for the same process');
    assert.equal(h.reader.dirsOf({ ...c, pid: 0 }), undefined, 'no process, no cgroup');
  });

  it('falls back to the driver naming for a reused PID or a process it cannot see', () => {
    const h = host();
    const named = h.scope('system.slice', ID);
    write(path.join(h.proc, '77', 'cgroup'), '0::/user.slice/session-1.scope\n');
    assert.deepEqual(h.reader.dirsOf({ id: ID, pid: 77, cgroupParent: '' }), { version: 2, dir: named });
    assert.deepEqual(h.reader.dirsOf({ id: OTHER, pid: 88, cgroupParent: 'kubepods-pod1.slice' }), {
      version: 2,
      dir: path.join(h.cg, 'kubepods.slice', 'kubepods-pod1.slice', `docker-${OTHER}.scope`),
    });
  });

  it('looks a new process (a restart) up afresh and closes the files held for the old one', () => {
    const h = host();
    const first = h.scope('first.slice', ID);
    const second = h.scope('second.slice', ID);
    write(path.join(h.proc, '77', 'cgroup'), `0::/first.slice/docker-${ID}.scope\n`);
    write(path.join(h.proc, '78', 'cgroup'), `0::/second.slice/docker-${ID}.scope\n`);
    const dirs = h.reader.dirsOf({ id: ID, pid: 77, cgroupParent: '' })!;
    assert.deepEqual(dirs, { version: 2, dir: first });
    assert.ok(h.reader.read(dirs, ['cpu.stat', 'memory.current'], ID));
    assert.equal(h.reader.heldFiles, 2);
    assert.deepEqual(h.reader.dirsOf({ id: ID, pid: 78, cgroupParent: '' }), { version: 2, dir: second });
    assert.equal(h.reader.heldFiles, 0);
  });

  it('a gone cgroup reads as undefined and nothing more is read; a file the host lacks is not looked for again', () => {
    const h = host();
    const dir = h.scope('system.slice', ID);
    const dirs = { version: 2 as const, dir };
    const files = h.reader.read(dirs, ['cpu.stat', 'memory.current', 'pids.current'], ID);
    assert.deepEqual(files, { 'cpu.stat': 'usage_usec 10\n', 'memory.current': '4096\n', 'pids.current': undefined });
    write(path.join(dir, 'pids.current'), '3\n');
    assert.equal(h.reader.read(dirs, ['pids.current'], ID)!['pids.current'], undefined, 'this host lacks pids.current');
    assert.equal(h.reader.read({ version: 2, dir: path.join(h.cg, 'gone') }, ['pids.current'], OTHER), undefined);
    assert.equal(h.reader.heldFiles, 2, 'only the live cgroup\'s files are held');
  });

  it('holds cgroup files per owner, never /proc/<pid>/net/dev, and forgets', () => {
    const h = host();
    const a = { version: 2 as const, dir: h.scope('system.slice', ID) };
    const b = { version: 2 as const, dir: h.scope('system.slice', OTHER) };
    write(path.join(h.proc, '77', 'net', 'dev'), 'eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n');
    h.reader.read(a, [], ID);
    assert.deepEqual(h.reader.pids(b, OTHER), [77]);
    assert.equal(h.reader.heldFiles, 3);
    assert.match(h.reader.netDev(77)!, /eth0/);
    assert.equal(h.reader.heldFiles, 3, 'net/dev is not kept open');
    h.reader.keepOnly(new Set([OTHER]));
    assert.equal(h.reader.heldFiles, 1);
    h.reader.forget(OTHER);
    assert.equal(h.reader.heldFiles, 0);
  });

  it('logs an unreadable file once by name, for every container, at debug', () => {
    const h = host();
    for (const [slice, id] of [['a.slice', ID], ['b.slice', OTHER]] as const) {
      // Two hierarchies' worth of directories, so the second is read too and not skipped as one the host lacks.
      const dir = h.scope(slice, id);
      fs.mkdirSync(path.join(dir, 'memory.stat')); // reading it fails with EISDIR
      h.reader.read({ version: 2, dir }, ['memory.stat'], id);
    }
    const logged = h.debugLines().filter((l) => String(l.file).endsWith('memory.stat'));
    assert.equal(logged.length, 1);
    assert.equal(logged[0]!.level, 20);
    assert.match(String(logged[0]!.msg), /^cgroups: cannot read a file/);
  });

  it('reads the mount table once', () => {
    const h = host();
    assert.equal(h.reader.mounts().length, 1);
    fs.rmSync(path.join(h.proc, 'self', 'mountinfo'));
    assert.equal(h.reader.mounts().length, 1);
    assert.ok(new CgroupReader({ driver: 'cgroupfs', log: silentLogger(), procRoot: path.join(h.root, 'none') }).mounts().length === 0);
  });
  it('gives a running container\'s CPU time from its CPU file alone, and nothing for one not running or gone', () => {
    const h = host();
    const dir = h.scope('system.slice', ID);
    write(path.join(h.proc, '77', 'cgroup'), `0::/system.slice/docker-${ID}.scope\n`);
    const c = { id: ID, pid: 77, cgroupParent: '' };
    assert.equal(h.reader.cpuUsage(c), 10_000n, 'usage_usec in nanoseconds');
    // The storage passes ask this of every running container: memory.current is not read.
    assert.equal(h.reader.heldFiles, 1, 'cpu.stat alone is read (and held)');
    write(path.join(dir, 'cpu.stat'), 'usage_usec 12\nuser_usec 7\n');
    assert.equal(h.reader.cpuUsage(c), 12_000n, 'read afresh through the held file');
    assert.equal(h.reader.cpuUsage({ ...c, pid: 0 }), undefined);
    // (A removed cgroup's held file fails to read; a removed regular file's does not, so the
    // reader is told to forget here, and finds the cgroup gone on its next lookup.)
    h.reader.forget(ID);
    fs.rmSync(dir, { recursive: true });
    assert.equal(h.reader.cpuUsage(c), undefined);
  });

  it('keepOnly keeps the files of a kept container\'s other owners (its pod\'s cgroup)', () => {
    const h = host();
    const dir = h.scope('system.slice', ID);
    const pod = { version: 2 as const, dir: path.dirname(dir) };
    write(path.join(pod.dir, 'cpu.stat'), 'usage_usec 1\n');
    write(path.join(pod.dir, 'memory.current'), '1\n');
    h.reader.read({ version: 2, dir }, [], ID);
    h.reader.read(pod, [], `${ID}/pod`);
    assert.equal(h.reader.heldFiles, 4);
    h.reader.keepOnly(new Set([ID]));
    assert.equal(h.reader.heldFiles, 4, 'the pod owner belongs to the kept container');
    h.reader.keepOnly(new Set([OTHER]));
    assert.equal(h.reader.heldFiles, 0);
  });

  describe('told by the state cache', () => {
    const LABELS = { 'io.kubernetes.docker.type': 'container' };
    const caches: DockerStateCache[] = [];
    after(() => Promise.all(caches.map((c) => c.stop())));

    /** A cache over a fake Docker holding ID (running as PID 77) and OTHER, a reader told by it, and both containers' files held. */
    async function watched() {
      const docker = new FakeDocker();
      docker.addImage('busybox', { Id: 'sha256:1111' });
      for (const id of [ID, OTHER]) docker.containers.set(id, inspectDoc({ Id: id, State: runningState(undefined, { Pid: 77 }), Config: { Labels: LABELS } }));
      const cache = new DockerStateCache(docker, silentLogger(), { initialMs: 5, maxMs: 20, subscribeTimeoutMs: 1_000 });
      caches.push(cache);
      await cache.start();
      const h = host(cache);
      const mine = { version: 2 as const, dir: h.scope('system.slice', ID) };
      h.reader.read(mine, [], ID);
      const pod = { version: 2 as const, dir: path.dirname(mine.dir) };
      write(path.join(pod.dir, 'cpu.stat'), 'usage_usec 1\n');
      write(path.join(pod.dir, 'memory.current'), '1\n');
      h.reader.read(pod, [], `${ID}/pod`);
      h.reader.read({ version: 2, dir: h.scope('system.slice', OTHER) }, [], OTHER);
      assert.equal(h.reader.heldFiles, 6);
      /** Docker's document of ID, changed by `over`, and the event that tells of it. */
      const change = (action: string, over: Parameters<typeof inspectDoc>[0] | undefined): void => {
        if (over) docker.containers.set(ID, inspectDoc({ Id: ID, Config: { Labels: LABELS }, ...over }));
        else docker.containers.delete(ID);
        docker.emit(action, ID, LABELS);
      };
      return { h, cache, change, mine };
    }

    it('closes a container\'s files (its pod\'s too) when it dies, without another read', async () => {
      const { h, change, mine } = await watched();
      change('die', { State: { Status: 'exited', StartedAt: '2026-11-22T02:33:52Z' } });
      await waitFor('the stopped container\'s files to be closed', () => h.reader.heldFiles === 2);
      // A read that comes after the word (a storage pass with a list from before it) is read once.
      assert.ok(h.reader.read(mine, ['cgroup.procs'], ID), 'its cgroup is still there in this made-up tree');
      assert.equal(h.reader.heldFiles, 2);
    });

    it('closes them when it is destroyed, and when it runs with a new process', async () => {
      const destroyed = await watched();
      destroyed.change('destroy', undefined);
      await waitFor('the removed container\'s files to be closed', () => destroyed.h.reader.heldFiles === 2);

      const restarted = await watched();
      restarted.change('restart', { State: runningState(undefined, { Pid: 78 }) });
      await waitFor('the old process\'s files to be closed', () => restarted.h.reader.heldFiles === 2);
    });

    it('keeps them through a change that leaves the same process running', async () => {
      const { h, cache, change } = await watched();
      change('update', { State: runningState(undefined, { Pid: 77 }), HostConfig: { NetworkMode: 'default', Memory: 1 } });
      await waitFor('the update to be applied', () => cache.containers.get(ID)?.HostConfig.Memory === 1);
      assert.equal(h.reader.heldFiles, 6);
    });
  });
});
