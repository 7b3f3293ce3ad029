// The cgroup v1 and v2 files (test/fixtures/pod-metrics; v1 copied from a Docker container on
// a v1 host with --memory 64m --cpus 0.5, v2 written in the kernel's format) as metric figures.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  figuresFromV1, figuresFromV2, parseBlkio, parseIoStat, sharesFromWeight, V1_FILES, V2_FILES,
} from '../../../src/pod-metrics/cgroup-figures';
import { parsePartitions, splitDev } from '../../../src/pod-metrics/proc-figures';
import { parsePids, type CgroupFiles } from '../../../src/cgroups/parse';
import { parseNetDev } from '../../../src/cgroups/net-dev';

const FIXTURES = path.resolve(__dirname, '../../../../test/fixtures/pod-metrics');

function filesOf(version: 'v1' | 'v2', names: readonly string[], without: string[] = []): CgroupFiles {
  const out: Record<string, string | undefined> = {};
  for (const name of names) {
    const p = path.join(FIXTURES, version, name);
    out[name] = !without.includes(name) && fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : undefined;
  }
  return out;
}

describe('figuresFromV1', () => {
  const f = figuresFromV1(filesOf('v1', V1_FILES));

  it('reads CPU time in nanoseconds and CFS throttling', () => {
    assert.equal(f.cpuUsageNs, 558249211n);
    assert.equal(f.cpuUserNs, 549688749n);
    assert.equal(f.cpuSystemNs, 22347005n);
    assert.deepEqual([f.cfsPeriods, f.cfsThrottledPeriods, f.cfsThrottledNs], [15n, 10n, 371345909n]);
    assert.deepEqual([f.specCpuPeriod, f.specCpuQuota, f.specCpuShares], [100000n, 50000n, 1024n]);
  });

  it('reads memory: working set is usage less inactive file, swap is memsw less usage, the sentinel limit is 0', () => {
    assert.equal(f.memoryUsage, 6082560n);
    assert.equal(f.memoryMaxUsage, 7393280n);
    assert.equal(f.memoryWorkingSet, 6082560n); // total_inactive_file is 0 here
    assert.equal(f.memoryCache, 5246976n);
    assert.equal(f.memoryRss, 118784n);
    assert.equal(f.memoryKernel, 307200n);
    assert.equal(f.memorySwap, 0n);
    assert.equal(f.oomKills, 0n);
    assert.equal(f.pgfault, 1495n);
    assert.equal(f.specMemoryLimit, 67108864n);
    assert.equal(f.specMemoryReservation, 0n, '9223372036854771712 means no soft limit');
    assert.equal(f.specMemorySwapLimit, 134217728n);
    assert.deepEqual([f.threads, f.threadsMax], [1n, 0n]);
  });

  it('reads block I/O per device, Read and Write only', () => {
    assert.deepEqual(f.blockIo, [{ major: 254, minor: 0, readBytes: 4096n, writeBytes: 1048576n, reads: 1n, writes: 16n }]);
    assert.deepEqual(parseBlkio('Total 0\n', 'Total 0\n'), []);
  });

  it('leaves out what a missing file would give (no swap accounting, old kernel without oom_kill)', () => {
    const g = figuresFromV1(filesOf('v1', V1_FILES, ['memory.memsw.usage_in_bytes', 'memory.memsw.limit_in_bytes', 'cpu.stat']));
    assert.equal(g.memorySwap, undefined);
    assert.equal(g.specMemorySwapLimit, undefined);
    assert.equal(g.cfsPeriods, undefined);
    assert.equal(figuresFromV1({ 'memory.oom_control': 'oom_kill_disable 0\nunder_oom 0\n' }).oomKills, undefined);
    assert.equal(figuresFromV1({ 'cpu.cfs_quota_us': '-1\n' }).specCpuQuota, undefined);
  });
});

describe('figuresFromV2', () => {
  const f = figuresFromV2(filesOf('v2', V2_FILES));

  it('reads CPU in microseconds as nanoseconds, cpu.max and the weight as shares', () => {
    assert.deepEqual([f.cpuUsageNs, f.cpuUserNs, f.cpuSystemNs], [2_500_000_000n, 2_000_000_000n, 500_000_000n]);
    assert.deepEqual([f.cfsPeriods, f.cfsThrottledPeriods, f.cfsThrottledNs], [40n, 12n, 1_500_000_000n]);
    assert.deepEqual([f.specCpuQuota, f.specCpuPeriod], [50000n, 100000n]);
    assert.equal(f.specCpuShares, sharesFromWeight(100n));
    assert.equal(sharesFromWeight(1n), 2n);
    assert.equal(sharesFromWeight(10000n), 262144n);
    assert.equal(figuresFromV2({ 'cpu.max': 'max 100000\n' }).specCpuQuota, undefined);
  });

  it('reads memory, memory.events and limits ("max" is 0)', () => {
    assert.equal(f.memoryUsage, 31457280n);
    assert.equal(f.memoryMaxUsage, 33554432n);
    assert.equal(f.memoryWorkingSet, 31457280n - 1048576n);
    assert.deepEqual([f.memoryRss, f.memoryCache, f.memoryMappedFile, f.memoryKernel], [4194304n, 26214400n, 8192n, 1048576n]);
    assert.deepEqual([f.memoryFailcnt, f.oomKills], [2n, 1n]);
    assert.equal(f.specMemoryLimit, 67108864n);
    assert.equal(f.specMemorySwapLimit, 0n, 'swap unlimited: memory plus swap unlimited');
    assert.equal(figuresFromV2({ 'memory.max': '100\n', 'memory.swap.max': '50\n' }).specMemorySwapLimit, 150n);
    assert.equal(figuresFromV2({ 'memory.max': 'max\n' }).specMemoryLimit, 0n);
    assert.deepEqual([f.threads, f.threadsMax], [3n, 1024n]);
  });

  it('leaves out peak and kernel on kernels without them', () => {
    const g = figuresFromV2(filesOf('v2', V2_FILES, ['memory.peak', 'memory.swap.current']));
    assert.equal(g.memoryMaxUsage, undefined);
    assert.equal(g.memorySwap, undefined);
    assert.equal(figuresFromV2({ 'memory.stat': 'anon 1\n' }).memoryKernel, undefined);
  });

  it('reads io.stat per device', () => {
    assert.deepEqual(f.blockIo, [{ major: 254, minor: 0, readBytes: 8192n, writeBytes: 2097152n, reads: 2n, writes: 32n }]);
    assert.deepEqual(parseIoStat(''), []);
  });
});

describe('/proc parsing for metrics', () => {
  it('net/dev: all eight counters of every interface but lo', () => {
    const text = [
      'Inter-|   Receive                                                |  Transmit',
      ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed',
      '    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0',
      '  eth0:    5000      50    1    2    0     0          0         0     3000      30    3    4    0     0       0          0',
    ].join('\n');
    assert.deepEqual(parseNetDev(text), [{ name: 'eth0', rxBytes: 5000n, rxPackets: 50n, rxErrors: 1n, rxDropped: 2n, txBytes: 3000n, txPackets: 30n, txErrors: 3n, txDropped: 4n }]);
  });

  it('cgroup.procs, /proc/partitions and dev numbers', () => {
    assert.deepEqual(parsePids('12\n345\n\n'), [12, 345]);
    assert.deepEqual([...parsePartitions('major minor  #blocks  name\n\n 254        0  268435456 vda\n   8       1    1000 sda1\n')], [['254:0', '/dev/vda'], ['8:1', '/dev/sda1']]);
    assert.deepEqual(splitDev(254 * 256 + 3), { major: 254, minor: 3 });
    assert.deepEqual(splitDev(259 * 256 + (0x1000 << 12)), { major: 259, minor: 4096 });
  });
});
