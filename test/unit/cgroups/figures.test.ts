// The one cgroup figures model: v1 and v2 files (test/fixtures/pod-metrics; v1 copied from a
// Docker container on a v1 host with --memory 64m --cpus 0.5, v2 written in the kernel's format)
// as the figures both the stats and the metrics map to their messages.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { figuresFromV1, figuresFromV2, FIGURE_FILES, readCgroupFigures, sharesFromWeight, type CgroupFigures } from '../../../src/cgroups/figures';
import { parseBlkio, parseIoStat } from '../../../src/cgroups/parse';
import { CgroupReader } from '../../../src/cgroups/reader';
import { silentLogger } from '../../../src/util/logger';
import { filesIn, FIGURE_FIXTURES } from '../../support/cgroup-files';

const MiB = 1024n * 1024n;
const V1_HUGE = '9223372036854771712';
const v1Files = (names: readonly string[], without: string[] = []) => filesIn(path.join(FIGURE_FIXTURES, 'v1'), names, without);
const v2Files = (names: readonly string[], without: string[] = []) => filesIn(path.join(FIGURE_FIXTURES, 'v2'), names, without);

describe('cgroup v1 files', () => {
  it('working set is usage less total_inactive_file; the limit as read', () => {
    const f = figuresFromV1({
      'cpuacct.usage': '24185907\n',
      'memory.usage_in_bytes': String(30n * MiB),
      'memory.limit_in_bytes': String(64n * MiB),
      'memory.stat': `cache 100\ninactive_file 5\ntotal_inactive_file ${10n * MiB}\ntotal_rss ${19n * MiB}\ntotal_pgfault 1063\ntotal_pgmajfault 4\n`,
      'pids.current': '3\n',
    });
    assert.deepEqual(f, {
      cpuUsageNs: 24185907n,
      memoryUsageBytes: 30n * MiB,
      workingSetBytes: 20n * MiB,
      rssBytes: 19n * MiB,
      cacheBytes: 100n,
      inactiveFileBytes: 10n * MiB,
      pageFaults: 1063n,
      majorPageFaults: 4n,
      processCount: 3n,
      memoryLimitBytes: 64n * MiB,
    });
  });
  it('no limit (the huge page-rounded number) is "unlimited"; working set never negative', () => {
    const f = figuresFromV1({ 'memory.usage_in_bytes': '100', 'memory.limit_in_bytes': V1_HUGE, 'memory.stat': 'total_inactive_file 400\n' });
    assert.equal(f.memoryLimitBytes, 'unlimited');
    assert.equal(f.workingSetBytes, 0n);
  });
});

describe('swap', () => {
  it('v1: memsw less memory, and the memsw limit less the memory limit', () => {
    const f = figuresFromV1({ 'memory.usage_in_bytes': String(10n * MiB), 'memory.limit_in_bytes': String(64n * MiB), 'memory.memsw.usage_in_bytes': String(12n * MiB), 'memory.memsw.limit_in_bytes': String(128n * MiB) });
    assert.equal(f.swapUsageBytes, 2n * MiB);
    assert.equal(f.swapLimitBytes, 64n * MiB);
    assert.equal(figuresFromV1({ 'memory.usage_in_bytes': '10', 'memory.memsw.usage_in_bytes': '10', 'memory.memsw.limit_in_bytes': V1_HUGE }).swapLimitBytes, 'unlimited');
    assert.equal(figuresFromV1({ 'memory.usage_in_bytes': '10' }).swapUsageBytes, undefined, 'no swap accounting');
  });
  it('v2: memory.swap.current and memory.swap.max', () => {
    const f = figuresFromV2({ 'memory.current': '1', 'memory.swap.current': '100', 'memory.swap.max': '1000' });
    assert.deepEqual([f.swapUsageBytes, f.swapLimitBytes], [100n, 1000n]);
    assert.equal(figuresFromV2({ 'memory.current': '1', 'memory.swap.current': '100', 'memory.swap.max': 'max' }).swapLimitBytes, 'unlimited');
  });
});

describe('cgroup v2 files', () => {
  it('cpu.stat usage_usec in nanoseconds, memory.current less inactive_file, "max" is no limit', () => {
    const f = figuresFromV2({
      'cpu.stat': 'usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n',
      'memory.current': String(8n * MiB),
      'memory.max': 'max\n',
      'memory.stat': `anon ${3n * MiB}\nfile ${5n * MiB}\ninactive_file ${2n * MiB}\npgfault 70\npgmajfault 1\n`,
      'pids.current': '2',
    });
    assert.deepEqual(f, {
      cpuUsageNs: 1_500_000n,
      cpuUserNs: 1_000_000n,
      cpuSystemNs: 500_000n,
      memoryUsageBytes: 8n * MiB,
      workingSetBytes: 6n * MiB,
      rssBytes: 3n * MiB,
      cacheBytes: 5n * MiB,
      inactiveFileBytes: 2n * MiB,
      pageFaults: 70n,
      majorPageFaults: 1n,
      processCount: 2n,
      memoryLimitBytes: 'unlimited',
    });
  });
});

describe('a v1 container\'s files', () => {
  const f = figuresFromV1(v1Files(FIGURE_FILES.all[1]));

  it('reads CPU time in nanoseconds and CFS throttling', () => {
    assert.equal(f.cpuUsageNs, 558249211n);
    assert.equal(f.cpuUserNs, 549688749n);
    assert.equal(f.cpuSystemNs, 22347005n);
    assert.deepEqual([f.cfsPeriods, f.cfsThrottledPeriods, f.cfsThrottledNs], [15n, 10n, 371345909n]);
    assert.deepEqual([f.cpuPeriodUs, f.cpuQuotaUs, f.cpuShares], [100000n, 50000n, 1024n]);
  });

  it('reads memory: working set is usage less inactive file, swap is memsw less usage, the sentinel limit is none', () => {
    assert.equal(f.memoryUsageBytes, 6082560n);
    assert.equal(f.memoryPeakBytes, 7393280n);
    assert.equal(f.workingSetBytes, 6082560n); // total_inactive_file is 0 here
    assert.equal(f.cacheBytes, 5246976n);
    assert.equal(f.rssBytes, 118784n);
    assert.equal(f.kernelBytes, 307200n);
    assert.equal(f.swapUsageBytes, 0n);
    assert.equal(f.oomKills, 0n);
    assert.equal(f.pageFaults, 1495n);
    assert.equal(f.memoryLimitBytes, 67108864n);
    assert.equal(f.memoryReservationBytes, 'unlimited', '9223372036854771712 means no soft limit');
    assert.equal(f.swapLimitBytes, 134217728n - 67108864n);
    assert.deepEqual([f.processCount, f.processLimit], [1n, 'unlimited']);
  });

  it('reads block I/O per device, Read and Write only', () => {
    assert.deepEqual(f.blockIo, [{ major: 254, minor: 0, readBytes: 4096n, writeBytes: 1048576n, reads: 1n, writes: 16n }]);
    assert.deepEqual(parseBlkio('Total 0\n', 'Total 0\n'), []);
  });

  it('leaves out what a missing file would give (no swap accounting, old kernel without oom_kill)', () => {
    const g = figuresFromV1(v1Files(FIGURE_FILES.all[1], ['memory.memsw.usage_in_bytes', 'memory.memsw.limit_in_bytes', 'cpu.stat']));
    assert.equal(g.swapUsageBytes, undefined);
    assert.equal(g.swapLimitBytes, undefined);
    assert.equal(g.cfsPeriods, undefined);
    assert.equal(figuresFromV1({ 'memory.oom_control': 'oom_kill_disable 0\nunder_oom 0\n' }).oomKills, undefined);
    assert.equal(figuresFromV1({ 'cpu.cfs_quota_us': '-1\n' }).cpuQuotaUs, undefined);
    assert.equal(figuresFromV1({}).blockIo, undefined);
  });
});

describe('a v2 container\'s files', () => {
  const f = figuresFromV2(v2Files(FIGURE_FILES.all[2]));

  it('reads CPU in microseconds as nanoseconds, cpu.max and the weight as shares', () => {
    assert.deepEqual([f.cpuUsageNs, f.cpuUserNs, f.cpuSystemNs], [2_500_000_000n, 2_000_000_000n, 500_000_000n]);
    assert.deepEqual([f.cfsPeriods, f.cfsThrottledPeriods, f.cfsThrottledNs], [40n, 12n, 1_500_000_000n]);
    assert.deepEqual([f.cpuQuotaUs, f.cpuPeriodUs], [50000n, 100000n]);
    assert.equal(f.cpuShares, sharesFromWeight(100n));
    assert.equal(sharesFromWeight(1n), 2n);
    assert.equal(sharesFromWeight(10000n), 262144n);
    assert.equal(figuresFromV2({ 'cpu.max': 'max 100000\n' }).cpuQuotaUs, undefined);
  });

  it('reads memory, memory.events and limits ("max" is none)', () => {
    assert.equal(f.memoryUsageBytes, 31457280n);
    assert.equal(f.memoryPeakBytes, 33554432n);
    assert.equal(f.workingSetBytes, 31457280n - 1048576n);
    assert.deepEqual([f.rssBytes, f.cacheBytes, f.mappedFileBytes, f.kernelBytes], [4194304n, 26214400n, 8192n, 1048576n]);
    assert.deepEqual([f.memoryFailcnt, f.oomKills], [2n, 1n]);
    assert.equal(f.memoryLimitBytes, 67108864n);
    assert.equal(f.swapLimitBytes, 'unlimited');
    assert.equal(figuresFromV2({ 'memory.max': '100\n', 'memory.swap.max': '50\n' }).swapLimitBytes, 50n);
    assert.equal(figuresFromV2({ 'memory.max': 'max\n' }).memoryLimitBytes, 'unlimited');
    assert.deepEqual([f.processCount, f.processLimit], [3n, 1024n]);
  });

  it('leaves out peak and kernel on kernels without them', () => {
    const g = figuresFromV2(v2Files(FIGURE_FILES.all[2], ['memory.peak', 'memory.swap.current']));
    assert.equal(g.memoryPeakBytes, undefined);
    assert.equal(g.swapUsageBytes, undefined);
    assert.equal(figuresFromV2({ 'memory.stat': 'anon 1\n' }).kernelBytes, undefined);
  });

  it('reads io.stat per device', () => {
    assert.deepEqual(f.blockIo, [{ major: 254, minor: 0, readBytes: 8192n, writeBytes: 2097152n, reads: 2n, writes: 32n }]);
    assert.deepEqual(parseIoStat(''), []);
  });
});

describe('the stats\' files and the metrics\' files', () => {
  const f1 = figuresFromV1(v1Files(FIGURE_FILES.all[1]));
  const f2 = figuresFromV2(v2Files(FIGURE_FILES.all[2]));
  // The stats read fewer files (they are polled often); what they read is the same figures.
  const within = (usage: CgroupFigures, all: CgroupFigures): void => {
    assert.ok(Object.keys(usage).length >= 10, 'the usage files give figures');
    for (const [k, v] of Object.entries(usage)) assert.deepEqual(v, all[k as keyof CgroupFigures], k);
  };
  it('give the same figures where both have them, v1 and v2', () => {
    for (const name of FIGURE_FILES.usage[1]) assert.ok((FIGURE_FILES.all[1] as readonly string[]).includes(name), name);
    for (const name of FIGURE_FILES.usage[2]) assert.ok((FIGURE_FILES.all[2] as readonly string[]).includes(name), name);
    within(figuresFromV1(v1Files(FIGURE_FILES.usage[1])), f1);
    within(figuresFromV2(v2Files(FIGURE_FILES.usage[2])), f2);
  });
});

describe('readCgroupFigures on fixture trees', () => {
  const ID = 'ab12'.repeat(16);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-figures-unit-'));
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it('reads a v1 container (co-mounted cpu,cpuacct) and its first process', () => {
    const root = path.join(tmp, 'v1');
    const files: Record<string, string> = {
      [`cpu,cpuacct/docker/${ID}/cpuacct.usage`]: '5000\n',
      [`memory/docker/${ID}/memory.usage_in_bytes`]: '4096\n',
      [`memory/docker/${ID}/memory.stat`]: 'total_inactive_file 1024\n',
      [`pids/docker/${ID}/pids.current`]: '2\n',
      [`pids/docker/${ID}/cgroup.procs`]: '4242\n4250\n',
    };
    for (const [rel, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), text);
    }
    const dirs = { version: 1 as const, dirs: { cpuacct: `${root}/cpu,cpuacct/docker/${ID}`, memory: `${root}/memory/docker/${ID}`, pids: `${root}/pids/docker/${ID}` } };
    const reader = new CgroupReader({ driver: 'cgroupfs', log: silentLogger() });
    assert.deepEqual(readCgroupFigures(reader, dirs, 'c1', 'usage'), { cpuUsageNs: 5000n, memoryUsageBytes: 4096n, workingSetBytes: 3072n, inactiveFileBytes: 1024n, processCount: 2n });
    assert.equal(reader.pids(dirs, 'c1')?.[0], 4242);
    // Read for an owner, the files stay open; the figures are the same, and the same from all the files.
    assert.deepEqual(readCgroupFigures(reader, dirs, 'c1', 'usage'), readCgroupFigures(reader, dirs, 'c1', 'usage'));
    assert.deepEqual(readCgroupFigures(reader, dirs, 'c1', 'usage'), readCgroupFigures(reader, dirs, 'c1', 'all'));
    assert.ok(reader.heldFiles >= 4);
    reader.close();
    assert.equal(reader.heldFiles, 0);
  });
  it('a cgroup that is gone gives no figures', () => {
    const reader = new CgroupReader({ driver: 'cgroupfs', log: silentLogger() });
    assert.equal(readCgroupFigures(reader, { version: 2, dir: path.join(tmp, 'nowhere') }, 'c1', 'usage'), undefined);
    assert.equal(reader.heldFiles, 0);
  });
});
