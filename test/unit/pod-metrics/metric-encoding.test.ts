// ListPodSandboxMetrics' answer written straight into its encoding decodes to the same message
// as the Metric objects of the same figures, encoded by protobufjs (what the server sent before):
// every metric kind, values of 0 and past 2^53, labels of every length class (a Metric whose
// length takes one byte, two, three), non-ASCII text, pods without network or containers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CgroupFigures } from '../../../src/cgroups/figures';
import type { InterfaceCounters } from '../../../src/cgroups/net-dev';
import { criContract } from '../../../src/cri/contract';
import type { PodSandboxMetrics } from '../../../src/cri/types';
import { PodMetricsWriter } from '../../../src/pod-metrics/metric-encoding';
import { containerMetricsInto, containerMetricsOf, podLabels, podNetworkMetricsInto, podNetworkMetricsOf, type ContainerReading } from '../../../src/pod-metrics/metric-messages';
import { decodePodMetrics } from '../../support/pod-metrics';

const pressure = (some: bigint, full: bigint) => ({ some: { avg10: 0, avg60: 0, avg300: 0, totalUsec: some }, full: { avg10: 0, avg60: 0, avg300: 0, totalUsec: full } });

const figures: CgroupFigures = {
  cpuUsageNs: 2_999_999_999n, cpuUserNs: 2_000_000_000n, cpuSystemNs: 0n, cfsPeriods: 5n, cfsThrottledPeriods: 1n, cfsThrottledNs: 1_500_000_000n,
  cpuPeriodUs: 100000n, cpuQuotaUs: 50000n, cpuShares: 1024n,
  memoryUsageBytes: (1n << 60n) + 1n, memoryPeakBytes: 2n ** 64n - 1n, workingSetBytes: 9n, rssBytes: 1n, cacheBytes: 2n, mappedFileBytes: 3n, kernelBytes: 4n, swapUsageBytes: 0n,
  memoryFailcnt: 0n, activeFileBytes: 127n, inactiveFileBytes: 128n, pageFaults: 16384n, majorPageFaults: 1n, oomKills: 0n, processCount: 2n, processLimit: 'unlimited',
  memoryLimitBytes: 67108864n, memoryReservationBytes: 'unlimited', swapLimitBytes: 67108864n,
  blockIo: [{ major: 254, minor: 0, readBytes: 1n, writeBytes: 2n, reads: 3n, writes: 4n }, { major: 8, minor: 16, readBytes: 0n, writes: 9n }],
  cpuPressure: pressure(5_000_000n, 2_999_999n), memoryPressure: pressure(3_000_000n, 0n), ioPressure: pressure(7_000_000n, 4_000_000n),
};

function reading(labels: ContainerReading['labels'], over: Partial<ContainerReading> = {}): ContainerReading {
  return {
    labels,
    cgroup: figures,
    processes: { processes: 1n, fileDescriptors: 4n, sockets: 1n },
    layer: { device: '/dev/vda', usageBytes: 4096n, limitBytes: 1000000n, inodesTotal: 100n, inodesFree: 50n },
    startedAt: 1699999000n,
    seenAt: 1700000000n,
    deviceNames: new Map([['254:0', '/dev/vda']]),
    ...over,
  };
}

const iface = (name: string, n: bigint): InterfaceCounters => ({ name, rxBytes: n, rxPackets: n + 1n, rxErrors: 0n, rxDropped: 0n, txBytes: n * 1000n, txPackets: 2n, txErrors: 0n, txDropped: 1n });

interface PodCase {
  name: string;
  namespace: string;
  sandboxId: string;
  interfaces: InterfaceCounters[] | undefined;
  containers: Array<{ id: string; reading: ContainerReading }>;
}

const ID = (c: string) => c.repeat(64);
const PODS: PodCase[] = [
  {
    name: 'web', namespace: 'prod', sandboxId: ID('a'), interfaces: [iface('lo', 0n), iface('eth0', 900n)],
    containers: [
      { id: ID('b'), reading: reading({ pod: 'web', namespace: 'prod', container: 'app', id: ID('b'), image: 'nginx:1' }) },
      // Short labels: a Metric under 128 bytes, its length one byte.
      { id: 'c', reading: reading({ pod: 'w', namespace: 'p', container: 'a', id: 'c', image: 'i' }, { processes: undefined, layer: undefined }) },
    ],
  },
  // Host network: no pod metrics; non-ASCII names; an image name so long that a Metric's length takes three bytes.
  {
    name: 'café-ünïcødé', namespace: '名前空間', sandboxId: ID('d'), interfaces: undefined,
    containers: [{ id: ID('e'), reading: reading({ pod: 'café-ünïcødé', namespace: '名前空間', container: 'ç', id: ID('e'), image: `registry/${'x'.repeat(20_000)}:1` }) }],
  },
  // A pod whose containers all stopped.
  { name: 'idle', namespace: 'default', sandboxId: ID('f'), interfaces: [iface('eth0', 2n ** 53n)], containers: [] },
];

function objects(p: PodCase): PodSandboxMetrics {
  return {
    podSandboxId: p.sandboxId,
    metrics: p.interfaces ? podNetworkMetricsOf({ name: p.name, namespace: p.namespace, sandboxId: p.sandboxId }, p.interfaces) : [],
    containerMetrics: p.containers.map((c) => ({ containerId: c.id, metrics: containerMetricsOf(c.reading) })),
  };
}

function written(pods: readonly PodCase[]) {
  const out = new PodMetricsWriter(256);
  for (const p of pods) {
    out.beginPod(p.sandboxId);
    if (p.interfaces) {
      out.beginMetrics(podLabels(p));
      podNetworkMetricsInto(out, p.interfaces);
    }
    for (const c of p.containers) {
      out.beginContainer(c.id, c.reading.labels);
      containerMetricsInto(out, c.reading);
      out.endContainer();
    }
    out.endPod();
  }
  return out.finish();
}

const rpc = criContract().runtime.v1.RuntimeService.service.ListPodSandboxMetrics;
/** The object path, as the server encoded answers before: protobufjs's encoding of the Metric objects. */
const viaObjects = (pods: readonly PodCase[]) => decodePodMetrics(rpc.responseSerialize({ podMetrics: pods.map(objects) }));

describe('PodMetricsWriter', () => {
  it('decodes to the message the Metric objects encode to', () => {
    const direct = decodePodMetrics(written(PODS).bytes);
    assert.deepEqual(direct, viaObjects(PODS));
    // The test sees what it means to: every kind of metric, and the values at the edges.
    const app = direct[0]!.containerMetrics[0]!.metrics;
    assert.equal(app.find((m) => m.name === 'container_memory_max_usage_bytes')!.value!.value, '18446744073709551615');
    assert.equal(app.find((m) => m.name === 'container_cpu_system_seconds_total')!.value!.value, '0');
    assert.equal(direct[1]!.containerMetrics[0]!.metrics[0]!.labelValues[4]!.length, 20_011);
    assert.equal(direct[1]!.metrics.length, 0);
    assert.equal(direct[2]!.metrics.length, 8);
  });

  it('gives each pod\'s entry apart, any run of them a message of the stream', () => {
    const { bytes, pods } = written(PODS);
    assert.equal(pods.length, PODS.length);
    assert.equal(Buffer.concat(pods).compare(bytes), 0);
    for (const [i, entry] of pods.entries()) assert.deepEqual(decodePodMetrics(entry), viaObjects([PODS[i]!]));
    const stream = criContract().runtime.v1.RuntimeService.service.StreamPodSandboxMetrics;
    const message = stream.responseDeserialize(Buffer.concat(pods.slice(1))) as { podSandboxMetrics: unknown[] };
    assert.deepEqual(message.podSandboxMetrics, viaObjects(PODS.slice(1)));
  });

  it('answers an empty message for no pods', () => {
    const { bytes, pods } = written([]);
    assert.equal(bytes.length, 0);
    assert.deepEqual(pods, []);
  });
});
