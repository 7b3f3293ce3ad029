// --runtime-cgroups over trees the test lays out as plain files: what the shim would write in a
// v1 and a v2 host's cgroup files (the memory limit, cpuset's CPUs and memory nodes, the
// subtree_control, cgroup.procs) and in /proc/<pid>/oom_score_adj, and which processes count
// as the Docker daemon. The kernel's own behaviour is tested in the cgroup v2 lane (test/cgroup2/);
// no test mounts a v1 hierarchy (test/support/daemon-stand-in.ts says why).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { ProcDaemonFinder, processName } from '../../../src/cgroups/docker-daemon';
import {
  layoutUnder,
  memoryLimitFor,
  MIN_MEMORY_LIMIT_BYTES,
  RuntimeCgroupPlacer,
  RuntimeCgroups,
  type RuntimeCgroupLayout,
} from '../../../src/cgroups/runtime-cgroups';
import type { CgroupMount } from '../../../src/cgroups/paths';
import { recordingLogger } from '../../support/recording-logger';
import { tempDir } from '../../support/temp';

const roots: string[] = [];
after(() => {
  for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
});

function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}
const read = (file: string): string => fs.readFileSync(file, 'utf8');

const CGROUP = '/system.slice/cri-docker.service';
const LIMIT = 1_000_000_000;

/** A process of a fake /proc: its cgroup file and its oom_score_adj. */
function fakeProcess(proc: string, pid: number, cgroupText: string): void {
  write(path.join(proc, String(pid), 'cgroup'), cgroupText);
  write(path.join(proc, String(pid), 'oom_score_adj'), '0\n');
}

describe('the memory limit', () => {
  it('is 70% of MemTotal, in bytes, rounded down as cri-dockerd computes it', () => {
    assert.equal(memoryLimitFor('MemTotal:       24683584 kB\nMemFree: 1 kB\n'), Math.floor((24683584 * 1024 * 70) / 100));
  });
  it('is at least 150 MiB, also when /proc/meminfo cannot be read', () => {
    assert.equal(memoryLimitFor('MemTotal: 102400 kB\n'), MIN_MEMORY_LIMIT_BYTES);
    assert.equal(memoryLimitFor(undefined), 150 * 1024 * 1024);
    assert.equal(memoryLimitFor('nothing here'), 150 * 1024 * 1024);
  });
});

describe('the layout under the cgroup root', () => {
  // This machine's kind of table: v1 controllers, name=systemd and an empty unified tree.
  const hybrid = [
    '30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw',
    '31 30 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu',
    '32 30 0:28 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset',
    '33 30 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory',
    '34 30 0:30 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd',
    '35 30 0:31 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw',
    // The memory hierarchy again at a second path: the same tree, counted once.
    '36 25 0:29 / /sys/fs/cgroup/memory-again rw - cgroup cgroup rw,memory',
    '37 25 0:32 / /elsewhere/cpuacct rw - cgroup cgroup rw,cpuacct',
  ].join('\n');

  it('is v1 on a hybrid host: every hierarchy under the root once, the unified tree left out', () => {
    const layout = layoutUnder(hybrid, '/sys/fs/cgroup');
    assert.equal(layout?.version, 1);
    assert.deepEqual(layout.version === 1 && layout.hierarchies.map((m) => m.mountPoint), [
      '/sys/fs/cgroup/cpu',
      '/sys/fs/cgroup/cpuset',
      '/sys/fs/cgroup/memory',
      '/sys/fs/cgroup/systemd',
    ]);
  });
  it('is v2 on a unified host, and nothing where no hierarchy is mounted', () => {
    const layout = layoutUnder('40 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate', '/sys/fs/cgroup');
    assert.deepEqual(layout, { version: 2, unified: { version: 2, mountPoint: '/sys/fs/cgroup', root: '/', controllers: [] } });
    assert.equal(layoutUnder(hybrid, '/tmp/nothing'), undefined);
  });
  it('takes a named v1 hierarchy alone (as the tests mount one)', () => {
    const layout = layoutUnder('50 25 0:40 / /tmp/t/h rw - cgroup cgroup rw,name=cdstest', '/tmp/t');
    assert.deepEqual(layout?.version === 1 && layout.hierarchies.map((m) => m.controllers), [['name=cdstest']]);
  });
});

describe('placing the daemon on a v1 tree', () => {
  function v1Host(): { root: string; proc: string; layout: RuntimeCgroupLayout } {
    const root = tempDir('rtcg-v1');
    roots.push(root);
    const mount = (name: string, controllers: string[]): CgroupMount => {
      fs.mkdirSync(path.join(root, 'cg', name), { recursive: true });
      return { version: 1, mountPoint: path.join(root, 'cg', name), root: '/', controllers };
    };
    const hierarchies = [mount('cpuset', ['cpuset']), mount('memory', ['memory']), mount('systemd', ['name=systemd'])];
    write(path.join(root, 'cg/cpuset/cpuset.cpus'), '0-3\n');
    write(path.join(root, 'cg/cpuset/cpuset.mems'), '0\n');
    const proc = path.join(root, 'proc');
    fakeProcess(proc, 100, '4:memory:/\n3:cpuset:/\n1:name=systemd:/system.slice/docker.service\n');
    // Already in place in every hierarchy: nothing to move.
    fakeProcess(proc, 200, `4:memory:${CGROUP}\n3:cpuset:${CGROUP}\n1:name=systemd:${CGROUP}\n`);
    return { root, proc, layout: { version: 1, hierarchies } };
  }

  it('makes the cgroup in each hierarchy, copies cpuset.cpus and cpuset.mems down each new level, sets memory.limit_in_bytes, then moves', () => {
    const { root, proc, layout } = v1Host();
    const placer = new RuntimeCgroupPlacer({ cgroup: CGROUP, layout, memoryLimitBytes: LIMIT, procRoot: proc });
    const report = placer.place([{ pid: 100, name: 'dockerd' }, { pid: 200, name: 'containerd' }]);
    assert.deepEqual(report.warnings, []);
    for (const level of ['system.slice', 'system.slice/cri-docker.service']) {
      assert.equal(read(path.join(root, 'cg/cpuset', level, 'cpuset.cpus')), '0-3');
      assert.equal(read(path.join(root, 'cg/cpuset', level, 'cpuset.mems')), '0');
    }
    assert.equal(read(path.join(root, 'cg/memory', CGROUP, 'memory.limit_in_bytes')), String(LIMIT));
    for (const h of ['cpuset', 'memory', 'systemd']) assert.equal(read(path.join(root, 'cg', h, CGROUP, 'cgroup.procs')), '100');
    assert.deepEqual(report.moved.map((m) => m.pid), [100, 100, 100]);
    // Both scored, the one already in place too.
    assert.deepEqual(report.scored, [100, 200]);
    assert.equal(read(path.join(proc, '100/oom_score_adj')), '-999');
    assert.equal(read(path.join(proc, '200/oom_score_adj')), '-999');
  });

  it('leaves a cpuset level that has CPUs alone, and says when no hierarchy has the memory controller', () => {
    const { root, proc, layout } = v1Host();
    write(path.join(root, 'cg/cpuset/system.slice/cpuset.cpus'), '1\n');
    write(path.join(root, 'cg/cpuset/system.slice/cpuset.mems'), '0\n');
    const noMemory: RuntimeCgroupLayout = { version: 1, hierarchies: layout.version === 1 ? layout.hierarchies.filter((m) => !m.controllers.includes('memory')) : [] };
    const report = new RuntimeCgroupPlacer({ cgroup: CGROUP, layout: noMemory, memoryLimitBytes: LIMIT, procRoot: proc }).place([{ pid: 100, name: 'dockerd' }]);
    assert.equal(read(path.join(root, 'cg/cpuset/system.slice/cpuset.cpus')), '1\n');
    assert.equal(read(path.join(root, 'cg/cpuset', CGROUP, 'cpuset.cpus')), '1');
    assert.deepEqual(report.warnings, [`no memory controller among the cgroup hierarchies; ${CGROUP} gets no memory limit (${LIMIT} bytes)`]);
    assert.equal(fs.existsSync(path.join(root, 'cg/memory', CGROUP)), false);
  });

  it('warns, naming the file and the hierarchy, when the memory limit cannot be written, and still moves', () => {
    const { root, proc, layout } = v1Host();
    // A directory where the file should be: the write fails (EISDIR) as a refused write would.
    fs.mkdirSync(path.join(root, 'cg/memory', CGROUP, 'memory.limit_in_bytes'), { recursive: true });
    const report = new RuntimeCgroupPlacer({ cgroup: CGROUP, layout, memoryLimitBytes: LIMIT, procRoot: proc }).place([{ pid: 100, name: 'dockerd' }]);
    assert.deepEqual(report.warnings, [
      `cannot set memory.limit_in_bytes of ${path.join(root, 'cg/memory', CGROUP)} (the memory hierarchy) to ${LIMIT}: EISDIR`,
    ]);
    assert.equal(read(path.join(root, 'cg/memory', CGROUP, 'cgroup.procs')), '100');
  });
});

describe('placing the daemon on a v2 tree', () => {
  function v2Host(controllers: string): { root: string; proc: string; layout: RuntimeCgroupLayout } {
    const root = tempDir('rtcg-v2');
    roots.push(root);
    const cg = path.join(root, 'cg');
    write(path.join(cg, 'cgroup.controllers'), `${controllers}\n`);
    write(path.join(cg, 'cgroup.subtree_control'), 'cpu\n');
    // systemd's slice exists already, memory enabled below it.
    write(path.join(cg, 'system.slice/cgroup.subtree_control'), 'cpu memory\n');
    const proc = path.join(root, 'proc');
    fakeProcess(proc, 100, '0::/system.slice/docker.service\n');
    return { root, proc, layout: { version: 2, unified: { version: 2, mountPoint: cg, root: '/', controllers: [] } } };
  }

  it('enables memory in the ancestors that lack it, sets memory.max and moves', () => {
    const { root, proc, layout } = v2Host('cpuset cpu io memory pids');
    const report = new RuntimeCgroupPlacer({ cgroup: CGROUP, layout, memoryLimitBytes: LIMIT, procRoot: proc }).place([{ pid: 100, name: 'dockerd' }]);
    assert.deepEqual(report.warnings, []);
    assert.equal(read(path.join(root, 'cg/cgroup.subtree_control')), '+memory');
    assert.equal(read(path.join(root, 'cg/system.slice/cgroup.subtree_control')), 'cpu memory\n');
    assert.equal(read(path.join(root, 'cg', CGROUP, 'memory.max')), String(LIMIT));
    assert.equal(read(path.join(root, 'cg', CGROUP, 'cgroup.procs')), '100');
  });

  it('warns when the hierarchy has no memory controller, and moves without a limit', () => {
    const { root, proc, layout } = v2Host('cpu pids');
    const report = new RuntimeCgroupPlacer({ cgroup: CGROUP, layout, memoryLimitBytes: LIMIT, procRoot: proc }).place([{ pid: 100, name: 'dockerd' }]);
    assert.deepEqual(report.warnings, [`the unified hierarchy at ${path.join(root, 'cg')} has no memory controller; ${CGROUP} gets no memory limit (${LIMIT} bytes)`]);
    assert.equal(fs.existsSync(path.join(root, 'cg', CGROUP, 'memory.max')), false);
    assert.equal(read(path.join(root, 'cg', CGROUP, 'cgroup.procs')), '100');
  });
});

describe('oom_score_adj on this kernel', () => {
  it('is -999 for a real process, or the kernel refused and the warning names CAP_SYS_RESOURCE', async (t) => {
    const child = spawn('sleep', ['600'], { stdio: 'ignore' });
    t.after(() => child.kill('SIGKILL'));
    await new Promise((resolve) => child.once('spawn', resolve));
    const pid = child.pid!;
    // No hierarchy: only the score is at stake.
    const report = new RuntimeCgroupPlacer({ cgroup: CGROUP, layout: { version: 1, hierarchies: [] }, memoryLimitBytes: LIMIT }).place([{ pid, name: 'dockerd' }]);
    const refusal = report.warnings.find((w) => w.startsWith('cannot set oom_score_adj'));
    if (refusal === undefined) {
      assert.deepEqual(report.scored, [pid]);
      assert.equal(read(`/proc/${pid}/oom_score_adj`).trim(), '-999');
    } else {
      assert.equal(refusal, `cannot set oom_score_adj -999 of dockerd (PID ${pid}): EACCES (lowering a score needs CAP_SYS_RESOURCE)`);
      assert.equal(read(`/proc/${pid}/oom_score_adj`).trim(), '0');
      assert.deepEqual(report.scored, []);
    }
  });
});

describe('the re-check', () => {
  it('warns once per distinct problem and at debug level when it repeats', () => {
    const { log, lines } = recordingLogger('debug');
    const finder = { find: () => ({ processes: [], problems: ['no dockerd or containerd process found'] }) };
    const recheck = new RuntimeCgroups(undefined, finder, log, 60_000, 'no cgroup hierarchy is mounted under /nowhere; only the OOM score is set');
    recheck.start();
    recheck.check();
    recheck.stop();
    const warned = lines().filter((l) => l.level === 40).map((l) => l.msg);
    assert.deepEqual(warned, [
      '--runtime-cgroups: no dockerd or containerd process found',
      '--runtime-cgroups: no cgroup hierarchy is mounted under /nowhere; only the OOM score is set',
    ]);
    assert.equal(lines().filter((l) => l.level === 20).length, 2);
  });
});

describe('finding the Docker daemon in /proc', () => {
  const HOST_NS = 'pid:[4026531836]';
  function fakeProc(): { proc: string; pidFile: string } {
    const root = tempDir('rtcg-proc');
    roots.push(root);
    const proc = path.join(root, 'proc');
    const add = (pid: number, cmdline: string, ns = HOST_NS, startTime = `${pid}0`): void => {
      write(path.join(proc, String(pid), 'cmdline'), cmdline);
      write(path.join(proc, String(pid), 'stat'), `${pid} (x y) S 1 ${Array.from({ length: 17 }, () => '0').join(' ')} ${startTime} 0\n`);
      fs.mkdirSync(path.join(proc, String(pid), 'ns'), { recursive: true });
      fs.symlinkSync(ns, path.join(proc, String(pid), 'ns', 'pid'));
    };
    add(1, '/sbin/init\0');
    add(100, '/usr/bin/dockerd\0-H\0fd://\0');
    add(200, 'containerd\0--config\0/var/run/docker/containerd/containerd.toml\0');
    add(300, '/usr/bin/containerd-shim-runc-v2\0-namespace\0moby\0');
    add(400, '/usr/bin/docker-containerd\0');
    // Docker in Docker: a dockerd in a container's PID namespace.
    add(500, '/usr/local/bin/dockerd\0', 'pid:[4026532999]');
    // A kernel thread.
    add(600, '');
    const pidFile = path.join(root, 'docker.pid');
    write(pidFile, '100');
    return { proc, pidFile };
  }

  it('names a process by argv[0] without its directory, as procfs.PidOf', () => {
    assert.equal(processName('/usr/bin/dockerd\0-H\0'), 'dockerd');
    assert.equal(processName('containerd: some title\0'), 'containerd');
  });

  it('takes dockerd from the PID file, containerd by name, and only processes of the host PID namespace', () => {
    const { proc, pidFile } = fakeProc();
    const found = new ProcDaemonFinder(proc, pidFile).find();
    assert.deepEqual(found, {
      processes: [
        { pid: 100, name: 'dockerd' },
        { pid: 200, name: 'containerd' },
        { pid: 400, name: 'containerd' },
      ],
      problems: [],
    });
  });

  it('looks dockerd up by name when the PID file is missing or names no process', () => {
    const { proc, pidFile } = fakeProc();
    write(pidFile, '999999\n');
    const found = new ProcDaemonFinder(proc, pidFile).find();
    // 500 is found by name but is in another PID namespace.
    assert.deepEqual(found.processes.filter((p) => p.name === 'dockerd'), [{ pid: 100, name: 'dockerd' }]);
  });

  it('walks /proc again only when a process it found ended or the PID file names another', () => {
    const { proc, pidFile } = fakeProc();
    const finder = new ProcDaemonFinder(proc, pidFile);
    finder.find();
    // A new containerd is not looked for while the known ones run...
    write(path.join(proc, '700/cmdline'), 'containerd\0');
    write(path.join(proc, '700/stat'), `700 (containerd) S 1 ${Array.from({ length: 17 }, () => '0').join(' ')} 7000 0\n`);
    fs.mkdirSync(path.join(proc, '700/ns'));
    fs.symlinkSync(HOST_NS, path.join(proc, '700/ns/pid'));
    assert.deepEqual(finder.find().processes.map((p) => p.pid), [100, 200, 400]);
    // ...but is once one of them ends (its PID taken by a process that started later).
    write(path.join(proc, '200/stat'), `200 (containerd) S 1 ${Array.from({ length: 17 }, () => '0').join(' ')} 99999 0\n`);
    assert.deepEqual(finder.find().processes.map((p) => p.pid), [100, 200, 400, 700]);
  });

  it('leaves every process alone when the host PID namespace cannot be read', () => {
    const { proc, pidFile } = fakeProc();
    fs.rmSync(path.join(proc, '1/ns/pid'));
    const found = new ProcDaemonFinder(proc, pidFile).find();
    assert.deepEqual(found.processes, []);
    assert.match(found.problems[0]!, /cannot read .*\/1\/ns\/pid, so cannot tell whether dockerd \(PID 100\), containerd \(PID 200\), containerd \(PID 400\) run in the host's PID namespace/);
  });
});
