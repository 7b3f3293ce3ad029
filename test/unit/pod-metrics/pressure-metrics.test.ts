// ListPodSandboxMetrics on a cgroup v2 host (test/fixtures/cgroup-v2, both drivers' layouts):
// cAdvisor's six PSI counters, in whole seconds, next to the figures v2 had already; on v1 none.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { CgroupReader } from '../../../src/cgroups/reader';
import type { ContainerInspect } from '../../../src/docker/types';
import { FIGURE_FILES, figuresFromV1, figuresFromV2 } from '../../../src/cgroups/figures';
import { metricDescriptors } from '../../../src/pod-metrics/metric-table';
import { PodMetricsCollector } from '../../../src/pod-metrics/metrics-collector';
import { silentLogger } from '../../../src/util/logger';
import { decodePodMetrics } from '../../support/pod-metrics';
import { layOutV2Host, podParentFor, V2_CONTAINER_ID, V2_CONTAINER_PID, V2_FIXTURES, V2_PAUSE_ID, V2_PAUSE_PID, type V2Host } from '../../support/cgroup-v2-host';

const PRESSURE = [
  'container_pressure_cpu_waiting_seconds_total', 'container_pressure_cpu_stalled_seconds_total',
  'container_pressure_memory_waiting_seconds_total', 'container_pressure_memory_stalled_seconds_total',
  'container_pressure_io_waiting_seconds_total', 'container_pressure_io_stalled_seconds_total',
];

const hosts: V2Host[] = [];
after(() => {
  for (const h of hosts) fs.rmSync(h.root, { recursive: true, force: true });
});

function inspectOf(id: string, pid: number, name: string, parent: string): ContainerInspect {
  return {
    Id: id,
    Name: name,
    State: { Running: true, Pid: pid, StartedAt: '2026-11-26T10:00:00Z' },
    HostConfig: { CgroupParent: parent, NetworkMode: 'bridge' },
    Config: { Image: 'busybox', Labels: {} },
  } as unknown as ContainerInspect;
}

describe('pressure metrics', () => {
  it('are announced as counters with the base labels only', () => {
    const found = metricDescriptors().filter((d) => PRESSURE.includes(d.name!));
    assert.deepEqual(found.map((d) => d.name).sort(), [...PRESSURE].sort());
    for (const d of found) assert.deepEqual(d.labelKeys, ['pod', 'namespace', 'container', 'id', 'image']);
  });

  for (const driver of ['cgroupfs', 'systemd'] as const) {
    it(`are read from a v2 container's *.pressure files (${driver} layout)`, async () => {
      const host = layOutV2Host(driver);
      hosts.push(host);
      const reader = new CgroupReader({ driver, log: silentLogger(), procRoot: host.procRoot });
      const collector = new PodMetricsCollector({ cgroupReader: reader }, { layerDir: () => undefined, writableLayer: () => undefined });
      const parent = podParentFor(driver);
      const [pod] = decodePodMetrics((await collector.collect([{
        sandbox: inspectOf(V2_PAUSE_ID, V2_PAUSE_PID, '/k8s_POD_web_prod_uid1_0', parent),
        name: 'web',
        namespace: 'prod',
        containers: [{ inspect: inspectOf(V2_CONTAINER_ID, V2_CONTAINER_PID, '/k8s_app_web_prod_uid1_0', parent), name: 'app' }],
      }], new AbortController().signal)).bytes);
      const metrics = pod!.containerMetrics[0]!.metrics;
      const value = (name: string) => metrics.filter((m) => m.name === name).map((m) => m.value!.value);
      // cpu.pressure some 3271554 µs, full 1520043 µs; memory 812337 / 601245; io 2504127 / 2210089.
      assert.deepEqual(PRESSURE.map(value), [['3'], ['1'], ['0'], ['0'], ['2'], ['2']]);
      for (const m of metrics.filter((x) => PRESSURE.includes(x.name!))) {
        assert.deepEqual(m.labelValues, ['web', 'prod', 'app', V2_CONTAINER_ID, 'busybox']);
        assert.equal(m.metricType, 'COUNTER');
      }
      // The OOM kills of memory.events and the throttling of cpu.stat, from the same files.
      assert.deepEqual(value('container_oom_events_total'), ['2']);
      assert.deepEqual(value('container_cpu_cfs_throttled_periods_total'), ['87']);
      reader.close();
    });
  }

  it('v1 figures have no pressure, v2 figures do', () => {
    const read = (dir: string, names?: readonly string[]) =>
      Object.fromEntries((names ?? fs.readdirSync(dir)).filter((n) => fs.existsSync(path.join(dir, n))).map((n) => [n, fs.readFileSync(path.join(dir, n), 'utf8')]));
    const v1 = figuresFromV1(read(path.resolve(__dirname, '../../../../test/fixtures/pod-metrics/v1'), FIGURE_FILES.all[1]));
    assert.deepEqual([v1.cpuPressure, v1.memoryPressure, v1.ioPressure], [undefined, undefined, undefined]);
    const v2 = figuresFromV2(read(path.join(V2_FIXTURES, 'container')));
    assert.equal(v2.cpuPressure?.some?.totalUsec, 3271554n);
  });
});
