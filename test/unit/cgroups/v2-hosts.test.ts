// cgroup v2 as the readers meet it: the PSI files this kernel writes, a v2 host's files in both
// drivers' layouts (test/fixtures/cgroup-v2), and a real cgroup made in this machine's
// controller-less unified hierarchy, read while busy processes run in it.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { parsePressure, PRESSURE_FILES } from '../../../src/cgroups/parse';
import { dirsFromProcCgroup, parseMountInfo, parseProcCgroup, podCgroupDirs, type CgroupDirs } from '../../../src/cgroups/paths';
import { CgroupReader } from '../../../src/cgroups/reader';
import { FIGURE_FILES, figuresFromV2, readCgroupFigures } from '../../../src/cgroups/figures';
import { silentLogger } from '../../../src/util/logger';
import { layOutV2Host, podParentFor, V2_CONTAINER_ID, V2_CONTAINER_PID, V2_FIXTURES, type V2Host } from '../../support/cgroup-v2-host';
import { waitFor } from '../../support/poll';

const hosts: V2Host[] = [];
after(() => {
  for (const h of hosts) fs.rmSync(h.root, { recursive: true, force: true });
});

const kernelFile = (name: string): string => fs.readFileSync(path.join(V2_FIXTURES, 'this-kernel', name), 'utf8');

describe('PSI files', () => {
  it('parses what this kernel wrote: some and full, averages in %, totals in µs', () => {
    assert.deepEqual(parsePressure(kernelFile('cpu.pressure')), {
      some: { avg10: 15.57, avg60: 2.81, avg300: 0.58, totalUsec: 2703535n },
      full: { avg10: 8.69, avg60: 1.57, avg300: 0.32, totalUsec: 1545769n },
    });
    // No stall is a measured 0, not an absent figure.
    assert.equal(parsePressure(kernelFile('io.pressure'))?.some?.totalUsec, 0n);
    // The core keys of a controller-less cgroup's cpu.stat (nice_usec on newer kernels) read as usage.
    assert.equal(figuresFromV2({ 'cpu.stat': kernelFile('cpu.stat') }).cpuUsageNs, 2771110n * 1000n);
  });
  it('a missing file, or one without a PSI line, is no pressure at all', () => {
    assert.equal(parsePressure(undefined), undefined);
    assert.equal(parsePressure(''), undefined);
    assert.equal(parsePressure('some avg10=x total=1\nfull\n'), undefined);
    assert.deepEqual(parsePressure('some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n'), { some: { avg10: 0, avg60: 0, avg300: 0, totalUsec: 5n } });
  });
});

for (const driver of ['cgroupfs', 'systemd'] as const) {
  describe(`a v2 host, Docker's ${driver} driver`, () => {
    const host = layOutV2Host(driver);
    hosts.push(host);
    const reader = (): CgroupReader => new CgroupReader({ driver, log: silentLogger(), procRoot: host.procRoot });
    const owner = { id: V2_CONTAINER_ID, pid: V2_CONTAINER_PID, cgroupParent: podParentFor(driver) };

    it('finds the container cgroup from /proc/<pid>/cgroup and reads its sample with PSI', () => {
      const r = reader();
      const dirs = r.dirsOf(owner);
      assert.deepEqual(dirs, { version: 2, dir: host.containerDir });
      // The storage figures' "did it run" and the pod network's first process, from the same cgroup.
      assert.equal(r.cpuUsage(owner), 8432117000n);
      assert.deepEqual(r.pids(dirs!, V2_CONTAINER_ID), [V2_CONTAINER_PID]);
      const sample = readCgroupFigures(r, dirs!, V2_CONTAINER_ID, 'usage');
      assert.deepEqual(sample, {
        cpuUsageNs: 8432117000n,
        cpuUserNs: 6120034000n,
        cpuSystemNs: 2312083000n,
        cfsPeriods: 1204n,
        cfsThrottledPeriods: 87n,
        cfsThrottledNs: 4518230000n,
        memoryUsageBytes: 57147392n,
        workingSetBytes: 57147392n - 16777216n,
        rssBytes: 31457280n,
        cacheBytes: 22020096n,
        mappedFileBytes: 9437184n,
        kernelBytes: 3670016n,
        activeFileBytes: 5242880n,
        inactiveFileBytes: 16777216n,
        pageFaults: 182043n,
        majorPageFaults: 41n,
        memoryLimitBytes: 134217728n,
        processCount: 7n,
        swapUsageBytes: 0n,
        swapLimitBytes: 0n,
        cpuPressure: { some: { avg10: 1.52, avg60: 0.87, avg300: 0.31, totalUsec: 3271554n }, full: { avg10: 0.61, avg60: 0.4, avg300: 0.12, totalUsec: 1520043n } },
        memoryPressure: { some: { avg10: 0, avg60: 0.12, avg300: 0.43, totalUsec: 812337n }, full: { avg10: 0, avg60: 0.08, avg300: 0.3, totalUsec: 601245n } },
        ioPressure: { some: { avg10: 0.34, avg60: 0.21, avg300: 0.05, totalUsec: 2504127n }, full: { avg10: 0.3, avg60: 0.18, avg300: 0.04, totalUsec: 2210089n } },
      });
      r.close();
    });

    it('without the process (another PID namespace), the driver naming finds the same cgroup, and the pod one level up', () => {
      const r = reader();
      const dirs = r.dirsOf({ ...owner, pid: 4242 });
      assert.deepEqual(dirs, { version: 2, dir: host.containerDir });
      const pod = podCgroupDirs(dirs!, podParentFor(driver), V2_CONTAINER_ID);
      assert.deepEqual(pod, { version: 2, dir: host.podDir });
      const sample = readCgroupFigures(r, pod!, `${V2_CONTAINER_ID}/pod`, 'usage');
      assert.equal(sample?.processCount, 8n);
      assert.equal(sample?.ioPressure?.full?.totalUsec, 2224001n);
      r.close();
    });

    it('the metrics figures: throttling, limits, OOM kills, io.stat and the three PSI files', () => {
      const r = reader();
      const f = readCgroupFigures(r, { version: 2, dir: host.containerDir }, V2_CONTAINER_ID, 'all')!;
      assert.deepEqual(
        [f.cfsPeriods, f.cfsThrottledPeriods, f.cfsThrottledNs, f.cpuQuotaUs, f.cpuPeriodUs, f.memoryLimitBytes, f.processCount, f.processLimit, f.oomKills, f.memoryFailcnt],
        [1204n, 87n, 4518230000n, 100000n, 100000n, 134217728n, 7n, 4096n, 2n, 214n],
      );
      assert.deepEqual(f.blockIo!.map((e) => [`${e.major}:${e.minor}`, e.readBytes, e.writeBytes]), [['259:0', 20971520n, 4194304n], ['253:0', 1048576n, 0n]]);
      assert.deepEqual([f.cpuPressure?.some?.totalUsec, f.memoryPressure?.full?.totalUsec, f.ioPressure?.some?.totalUsec], [3271554n, 601245n, 2504127n]);
      r.close();
    });
  });
}

describe('this machine\'s real cgroup v2 hierarchy (controller-less)', () => {
  const UNIFIED = '/sys/fs/cgroup/unified';
  const available = fs.existsSync(path.join(UNIFIED, 'cgroup.procs')) && fs.existsSync(path.join(UNIFIED, 'cpu.pressure'));
  it('reads a real cgroup\'s cpu.stat and *.pressure through the mount table, /proc/<pid>/cgroup and the reader', { skip: available ? false : `${UNIFIED} (cgroup2 with PSI) is absent on this machine` }, async (t) => {
    const name = `cds-test-${process.pid}-${Date.now()}`;
    const dir = path.join(UNIFIED, name);
    fs.mkdirSync(dir);
    const busy: ChildProcess[] = [];
    t.after(async () => {
      for (const c of busy) c.kill('SIGKILL');
      await Promise.all(busy.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((resolve) => c.once('exit', resolve)))));
      // A cgroup with no process left can go; the kernel refuses (EBUSY) only while one is in it.
      await waitFor('the test cgroup to empty', () => fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').trim() === '', { timeoutMs: 5_000 });
      fs.rmdirSync(dir);
    });
    // Three spinning processes on a machine of two cores: some of them wait for a CPU.
    for (let i = 0; i < 3; i++) {
      const c = spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' });
      busy.push(c);
      fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(c.pid));
    }
    const pid = busy[0]!.pid!;
    // The real mount table and the real /proc/<pid>/cgroup: keep only the unified hierarchy, as a v2 host has.
    const mounts = parseMountInfo(fs.readFileSync('/proc/self/mountinfo', 'utf8')).filter((m) => m.version === 2);
    const entries = parseProcCgroup(fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8'));
    const dirs = dirsFromProcCgroup(entries, mounts);
    assert.deepEqual(dirs, { version: 2, dir } satisfies CgroupDirs);
    const reader = new CgroupReader({ driver: 'cgroupfs', log: silentLogger() });
    t.after(() => reader.close());
    assert.deepEqual(reader.pids(dirs!, name)?.sort(), busy.map((c) => c.pid).sort());
    let sample = readCgroupFigures(reader, dirs!, name, 'usage');
    await waitFor('CPU time and a CPU stall in the test cgroup', () => {
      sample = readCgroupFigures(reader, dirs!, name, 'usage');
      return (sample?.cpuUsageNs ?? 0n) > 200_000_000n && (sample?.cpuPressure?.some?.totalUsec ?? 0n) > 0n;
    }, { timeoutMs: 20_000 });
    const s = sample!;
    t.diagnostic(`real v2 cgroup: cpu ${s.cpuUsageNs} ns; cpu.pressure some ${JSON.stringify(s.cpuPressure?.some, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}; full ${s.cpuPressure?.full?.totalUsec} µs; memory some ${s.memoryPressure?.some?.totalUsec} µs; io some ${s.ioPressure?.some?.totalUsec} µs`);
    // Present, as on any v2 host with PSI; a controller-less cgroup has no memory.* or pids.* files,
    // so those figures are left out rather than 0.
    assert.ok(s.cpuPressure?.full !== undefined && s.memoryPressure?.some !== undefined && s.ioPressure?.full !== undefined);
    assert.ok(s.cpuPressure!.full!.totalUsec <= s.cpuPressure!.some!.totalUsec, 'all stalled is never more than some stalled');
    assert.equal(s.memoryUsageBytes, undefined);
    assert.equal(s.processCount, undefined);
    // The files the stats and metrics ask for that this cgroup lacks are remembered as lacking.
    assert.ok(FIGURE_FILES.usage[2].includes(PRESSURE_FILES.io));
    const figures = readCgroupFigures(reader, dirs!, name, 'all')!;
    assert.ok((figures.cpuUserNs ?? 0n) > 0n);
    assert.ok(figures.cpuPressure?.some !== undefined);
  });
});
