import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { containerStatsOf, memoryUsage, networkUsage, sumFigures, swapUsage } from '../../../src/stats/stats-convert';
import { figuresFromV1, figuresFromV2 } from '../../../src/cgroups/figures';
import { u64 } from '../../../src/cri/u64';
import { CpuRateTracker, MIN_RATE_INTERVAL_NS } from '../../../src/stats/cpu-rate';
import { parseNetDev } from '../../../src/cgroups/net-dev';

const SECOND = 1_000_000_000n;

describe('CpuRateTracker', () => {
  it('no rate on the first reading; then CPU nanoseconds per wall second', () => {
    const t = new CpuRateTracker();
    assert.equal(t.rate('a', 1_000n, 10n * SECOND), undefined);
    // Half a core for two seconds.
    assert.equal(t.rate('a', 1_000n + SECOND, 12n * SECOND), 500_000_000n);
  });
  it('readings closer than the minimum interval repeat the last rate instead of a noisy one', () => {
    const t = new CpuRateTracker();
    t.rate('a', 0n, 0n);
    assert.equal(t.rate('a', SECOND, SECOND), SECOND);
    assert.equal(t.rate('a', SECOND + 5n, SECOND + MIN_RATE_INTERVAL_NS / 2n), SECOND);
  });
  it('a counter that went backwards (a new cgroup) starts over', () => {
    const t = new CpuRateTracker();
    t.rate('a', 5n * SECOND, 0n);
    assert.equal(t.rate('a', 1n, SECOND), undefined);
    assert.equal(t.rate('a', 1n + SECOND / 4n, 2n * SECOND), SECOND / 4n);
  });
  it('keys are independent and can be pruned', () => {
    const t = new CpuRateTracker();
    t.rate('a', 0n, 0n);
    t.rate('pod:b', 0n, 0n);
    t.prune((k) => k === 'a');
    assert.equal(t.size, 1);
    assert.equal(t.rate('pod:b', SECOND, SECOND), undefined, 'pruned key starts over');
  });
});

describe('parseNetDev', () => {
  const text = [
    'Inter-|   Receive                                                |  Transmit',
    ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed',
    '    lo:     500       5    0    0    0     0          0         0      500       5    0    0    0     0       0          0',
    '  eth0:    2000      20    3    0    0     0          0         0     1000      10    1    0    0     0       0          0',
    '  net1: 18446744073709551615 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0',
  ].join('\n');
  it('skips lo and reads bytes and errors each way, beyond 2^53 too', () => {
    assert.deepEqual(parseNetDev(text), [
      { name: 'eth0', rxBytes: 2000n, rxPackets: 20n, rxErrors: 3n, rxDropped: 0n, txBytes: 1000n, txPackets: 10n, txErrors: 1n, txDropped: 0n },
      { name: 'net1', rxBytes: 18446744073709551615n, rxPackets: 1n, rxErrors: 0n, rxDropped: 0n, txBytes: 7n, txPackets: 1n, txErrors: 0n, txDropped: 0n },
    ]);
  });
  it('eth0 is the default interface', () => {
    const u = networkUsage(parseNetDev(text), '5');
    assert.equal(u.defaultInterface!.name, 'eth0');
    assert.equal(u.defaultInterface!.rxBytes!.value, 2000);
    assert.equal(u.interfaces!.length, 2);
    assert.equal(networkUsage([], '5').defaultInterface, undefined);
  });
});

describe('stats conversion', () => {
  it('gives figures as numbers while exact, and as decimal strings past 2^53', () => {
    assert.deepEqual(u64(4096n), { value: 4096 });
    assert.deepEqual(u64(2n ** 53n - 1n), { value: Number.MAX_SAFE_INTEGER });
    assert.deepEqual(u64(2n ** 53n), { value: '9007199254740992' });
    assert.deepEqual(u64(2n ** 64n - 1n), { value: '18446744073709551615' });
    assert.deepEqual(u64(12), { value: 12 });
    assert.equal(u64(undefined), undefined);
  });

  it('a pod adds its members up; limits are not added', () => {
    assert.deepEqual(sumFigures([{ cpuUsageNs: 1n, workingSetBytes: 10n, memoryLimitBytes: 15n }, { cpuUsageNs: 2n, processCount: 1n, swapLimitBytes: 'unlimited' }]), {
      cpuUsageNs: 3n,
      workingSetBytes: 10n,
      processCount: 1n,
    });
    assert.equal(sumFigures([]), undefined);
  });
  it('figures nobody measured are absent; a stopped container is zero', () => {
    const attributes = { id: 'x' };
    const running = containerStatsOf({ attributes, sample: { cpuUsageNs: 7n }, nanoCores: undefined, layer: undefined, timestamp: '9' });
    assert.deepEqual(running.cpu, { timestamp: '9', usageCoreNanoSeconds: { value: 7 } });
    assert.deepEqual(running.memory, { timestamp: '9' });
    assert.equal(running.writableLayer, undefined);
    const stopped = containerStatsOf({ attributes, sample: undefined, nanoCores: undefined, layer: undefined, timestamp: '9' });
    assert.equal(stopped.cpu!.usageCoreNanoSeconds!.value, 0);
    assert.equal(stopped.memory!.workingSetBytes!.value, 0);
  });

  it('available memory is the limit less the working set; no limit, no available_bytes', () => {
    const MiB = 1024n * 1024n;
    const limited = figuresFromV1({ 'memory.usage_in_bytes': String(30n * MiB), 'memory.limit_in_bytes': String(64n * MiB), 'memory.stat': `total_inactive_file ${10n * MiB}\n` });
    assert.equal(memoryUsage(limited, '1').availableBytes!.value, Number(44n * MiB));
    const unlimited = figuresFromV1({ 'memory.usage_in_bytes': '100', 'memory.limit_in_bytes': '9223372036854771712', 'memory.stat': 'total_inactive_file 400\n' });
    assert.equal(memoryUsage(unlimited, '1').availableBytes, undefined);
    assert.equal(memoryUsage(figuresFromV2({ 'memory.current': '100', 'memory.max': 'max\n' }), '1').availableBytes, undefined);
    assert.equal(memoryUsage(figuresFromV2({ 'memory.current': '100', 'memory.max': '40' }), '1').availableBytes!.value, 0, 'never negative');
  });
  it('available swap: v1 the memsw limit less the memory limit less swap used; v2 memory.swap.max less swap used', () => {
    const MiB = 1024n * 1024n;
    const v1 = figuresFromV1({ 'memory.usage_in_bytes': String(10n * MiB), 'memory.limit_in_bytes': String(64n * MiB), 'memory.memsw.usage_in_bytes': String(12n * MiB), 'memory.memsw.limit_in_bytes': String(128n * MiB) });
    assert.deepEqual(swapUsage(v1, '1'), { timestamp: '1', swapUsageBytes: { value: Number(2n * MiB) }, swapAvailableBytes: { value: Number(62n * MiB) } });
    const noSwapLimit = figuresFromV1({ 'memory.usage_in_bytes': '10', 'memory.memsw.usage_in_bytes': '10', 'memory.memsw.limit_in_bytes': '9223372036854771712' });
    assert.equal(swapUsage(noSwapLimit, '1')!.swapAvailableBytes, undefined);
    assert.equal(swapUsage(figuresFromV1({ 'memory.usage_in_bytes': '10' }), '1'), undefined, 'no swap accounting');
    const v2 = swapUsage(figuresFromV2({ 'memory.current': '1', 'memory.swap.current': '100', 'memory.swap.max': '1000' }), '1')!;
    assert.deepEqual([v2.swapUsageBytes!.value, v2.swapAvailableBytes!.value], [100, 900]);
    assert.equal(swapUsage(figuresFromV2({ 'memory.current': '1', 'memory.swap.current': '100', 'memory.swap.max': 'max' }), '1')!.swapAvailableBytes, undefined);
  });
});
