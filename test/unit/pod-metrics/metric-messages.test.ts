// Figures as CRI Metric messages: every metric has its descriptor's label count and kind,
// second-valued counters are whole seconds, and a figure not read is absent.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { containerMetricsOf, MetricList, podNetworkMetricsOf, type ContainerReading } from '../../../src/pod-metrics/metric-messages';
import { FIGURE_FILES, figuresFromV1, figuresFromV2, sharesFromWeight, type CgroupFigures } from '../../../src/cgroups/figures';
import { filesIn, FIGURE_FIXTURES } from '../../support/cgroup-files';
import { metricDescriptors, METRICS } from '../../../src/pod-metrics/metric-table';

const descriptors = new Map(metricDescriptors().map((d) => [d.name, d]));
const labels = { pod: 'web', namespace: 'prod', container: 'app', id: 'c1', image: 'nginx:1' };

function reading(cgroup: Partial<CgroupFigures>, over: Partial<ContainerReading> = {}): ContainerReading {
  return { labels, cgroup: { ...cgroup }, processes: undefined, layer: undefined, startedAt: undefined, seenAt: 1700000000n, deviceNames: new Map(), ...over };
}

const full: Partial<CgroupFigures> = {
  cpuUsageNs: 2_999_999_999n, cpuUserNs: 2_000_000_000n, cpuSystemNs: 999_999_999n, cfsPeriods: 5n, cfsThrottledPeriods: 1n, cfsThrottledNs: 1_500_000_000n,
  memoryUsageBytes: 10n, memoryPeakBytes: 11n, workingSetBytes: 9n, rssBytes: 1n, cacheBytes: 2n, mappedFileBytes: 3n, kernelBytes: 4n, swapUsageBytes: 0n,
  memoryFailcnt: 0n, activeFileBytes: 1n, inactiveFileBytes: 1n, pageFaults: 7n, majorPageFaults: 1n, oomKills: 0n, processCount: 2n, processLimit: 'unlimited',
  cpuPeriodUs: 100000n, cpuQuotaUs: 50000n, cpuShares: 1024n, memoryLimitBytes: 'unlimited', memoryReservationBytes: 'unlimited', swapLimitBytes: 'unlimited',
  blockIo: [{ major: 254, minor: 0, readBytes: 1n, writeBytes: 2n, reads: 3n, writes: 4n }],
  cpuPressure: { some: { avg10: 0, avg60: 0, avg300: 0, totalUsec: 5_000_000n }, full: { avg10: 0, avg60: 0, avg300: 0, totalUsec: 2_999_999n } },
  memoryPressure: { some: { avg10: 0, avg60: 0, avg300: 0, totalUsec: 3_000_000n }, full: { avg10: 0, avg60: 0, avg300: 0, totalUsec: 1_000_000n } },
  ioPressure: { some: { avg10: 0, avg60: 0, avg300: 0, totalUsec: 7_000_000n }, full: { avg10: 0, avg60: 0, avg300: 0, totalUsec: 4_000_000n } },
};

describe('metric descriptors', () => {
  it('have unique names, help, and base labels first', () => {
    const all = metricDescriptors();
    assert.equal(new Set(all.map((d) => d.name)).size, all.length);
    assert.equal(all.length, METRICS.length);
    for (const d of all) {
      assert.ok(d.help && d.help.length > 10);
      assert.deepEqual(d.labelKeys!.slice(0, 5), ['pod', 'namespace', 'container', 'id', 'image']);
    }
  });
});

describe('containerMetricsOf', () => {
  const metrics = containerMetricsOf(reading(full, {
    processes: { processes: 1n, fileDescriptors: 4n, sockets: 1n },
    layer: { device: '/dev/vda', usageBytes: 4096n, limitBytes: 1000000n, inodesTotal: 100n, inodesFree: 50n },
    startedAt: 1699999000n,
    deviceNames: new Map([['254:0', '/dev/vda']]),
  }));
  const named = (name: string) => metrics.filter((m) => m.name === name);

  it('every metric matches its descriptor\'s label count and kind, and every descriptor but the network ones is used', () => {
    for (const m of metrics) {
      const d = descriptors.get(m.name!);
      assert.ok(d, m.name);
      assert.equal(m.labelValues!.length, d.labelKeys!.length, m.name);
      assert.deepEqual(m.labelValues!.slice(0, 5), ['web', 'prod', 'app', 'c1', 'nginx:1']);
      const spec = METRICS.find((s) => s.name === m.name)!;
      assert.equal(m.metricType, spec.kind);
      assert.equal(m.timestamp, undefined, 'a live reading: 0 on the wire');
    }
    const used = new Set(metrics.map((m) => m.name));
    const unused = [...descriptors.keys()].filter((n) => !used.has(n));
    assert.ok(unused.every((n) => n?.startsWith('container_network_')), `unused: ${unused.join(', ')}`);
  });

  it('gives seconds as whole seconds and bytes as bytes', () => {
    assert.equal(named('container_cpu_usage_seconds_total')[0]!.value!.value, 2);
    assert.equal(named('container_cpu_system_seconds_total')[0]!.value!.value, 0);
    assert.equal(named('container_cpu_cfs_throttled_seconds_total')[0]!.value!.value, 1);
    assert.equal(named('container_memory_usage_bytes')[0]!.value!.value, 10);
    assert.equal(named('container_start_time_seconds')[0]!.value!.value, 1699999000);
    // Past 2^53 a number would round: such a value travels as a decimal string.
    const huge = containerMetricsOf(reading({ memoryUsageBytes: (1n << 60n) + 1n }));
    assert.equal(huge.find((m) => m.name === 'container_memory_usage_bytes')!.value!.value, '1152921504606846977');
  });

  it('PSI totals (µs) as whole seconds: waiting is "some", stalled is "full"', () => {
    const value = (name: string) => named(name).map((m) => m.value!.value);
    assert.deepEqual(
      ['cpu', 'memory', 'io'].map((r) => [value(`container_pressure_${r}_waiting_seconds_total`), value(`container_pressure_${r}_stalled_seconds_total`)]),
      [[[5], [2]], [[3], [1]], [[7], [4]]],
    );
    // Without pressure files (cgroup v1) the six are absent, not 0.
    const v1 = containerMetricsOf(reading({ ...full, cpuPressure: undefined, memoryPressure: undefined, ioPressure: undefined }));
    assert.deepEqual(v1.filter((m) => m.name!.startsWith('container_pressure_')), []);
  });

  it('labels faults by kind and scope, block I/O by device name and numbers', () => {
    assert.deepEqual(named('container_memory_failures_total').map((m) => m.labelValues!.slice(5)), [['pgfault', 'container'], ['pgmajfault', 'container']]);
    assert.deepEqual(named('container_fs_writes_bytes_total').map((m) => [m.labelValues![5], m.value!.value]), [['/dev/vda', 2]]);
    assert.deepEqual(named('container_blkio_device_usage_total').map((m) => m.labelValues!.slice(5)), [['/dev/vda', '254', '0', 'Read'], ['/dev/vda', '254', '0', 'Write']]);
  });

  it('leaves out every figure that was not read', () => {
    const bare = containerMetricsOf(reading({ memoryUsageBytes: 5n }));
    assert.deepEqual(bare.map((m) => m.name).sort(), ['container_last_seen', 'container_memory_usage_bytes']);
    const unnamed = containerMetricsOf(reading({ blockIo: [{ major: 8, minor: 1, writeBytes: 9n }] }));
    assert.deepEqual(unnamed.filter((m) => m.name === 'container_fs_writes_bytes_total').map((m) => m.labelValues![5]), ['8:1']);
    assert.equal(unnamed.filter((m) => m.name === 'container_fs_reads_bytes_total').length, 0);
  });
});

describe('limits and shares as cAdvisor reports them', () => {
  const valueOf = (f: CgroupFigures, name: string) => containerMetricsOf(reading(f)).filter((m) => m.name === name).map((m) => m.value!.value);
  const limits = (f: CgroupFigures) =>
    ['container_spec_memory_limit_bytes', 'container_spec_memory_reservation_limit_bytes', 'container_spec_memory_swap_limit_bytes', 'container_threads', 'container_threads_max'].map((n) => valueOf(f, n)[0]);

  it('v1: the sentinel no-limit is 0, the swap limit is memsw\'s (memory plus swap)', () => {
    const f = figuresFromV1(filesIn(path.join(FIGURE_FIXTURES, 'v1'), FIGURE_FILES.all[1]));
    assert.deepEqual(limits(f), [67108864, 0, 134217728, 1, 0]);
    assert.deepEqual(valueOf(f, 'container_spec_cpu_shares'), [1024]);
  });

  it('v2: "max" is 0, the swap limit is memory.max plus memory.swap.max (0 when either has none)', () => {
    const f = figuresFromV2(filesIn(path.join(FIGURE_FIXTURES, 'v2'), FIGURE_FILES.all[2]));
    assert.deepEqual(limits(f), [67108864, 0, 0, 3, 1024]);
    assert.deepEqual(valueOf(f, 'container_spec_cpu_shares'), [Number(sharesFromWeight(100n))]);
    assert.deepEqual(valueOf(figuresFromV2({ 'memory.max': '100\n', 'memory.swap.max': '50\n' }), 'container_spec_memory_swap_limit_bytes'), [150]);
    assert.deepEqual(valueOf(figuresFromV2({ 'memory.max': 'max\n' }), 'container_spec_memory_limit_bytes'), [0]);
  });
});

describe('podNetworkMetricsOf and MetricList', () => {
  it('labels each interface, with the sandbox ID and no container or image', () => {
    const m = podNetworkMetricsOf({ name: 'web', namespace: 'prod', sandboxId: 's1' }, [
      { name: 'eth0', rxBytes: 1n, rxPackets: 2n, rxErrors: 0n, rxDropped: 0n, txBytes: 3n, txPackets: 4n, txErrors: 0n, txDropped: 0n },
      { name: 'net1', rxBytes: 5n, rxPackets: 6n, rxErrors: 0n, rxDropped: 0n, txBytes: 7n, txPackets: 8n, txErrors: 0n, txDropped: 0n },
    ]);
    assert.equal(m.length, 16);
    for (const x of m) assert.equal(x.labelValues!.length, descriptors.get(x.name!)!.labelKeys!.length);
    const rx = m.filter((x) => x.name === 'container_network_receive_bytes_total');
    assert.deepEqual(rx.map((x) => [x.labelValues, x.value!.value]), [[['web', 'prod', '', 's1', '', 'eth0'], 1], [['web', 'prod', '', 's1', '', 'net1'], 5]]);
  });

  it('refuses a metric given the wrong number of extra labels', () => {
    const list = new MetricList(['a', 'b', 'c', 'd', 'e']);
    const named = (name: string) => METRICS.find((s) => s.name === name)!;
    assert.throws(() => list.add(named('container_network_receive_bytes_total'), 1n), /1 extra labels, given 0/);
    assert.throws(() => list.add(named('container_cpu_usage_seconds_total'), 1n, ['x']), /0 extra labels, given 1/);
  });
});
