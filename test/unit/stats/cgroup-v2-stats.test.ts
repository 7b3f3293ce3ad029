// ContainerStats and PodSandboxStats from a cgroup v2 host's files (test/fixtures/cgroup-v2, laid
// out as Docker's cgroupfs and systemd drivers place them under kubelet's pod parent): CPU,
// memory and I/O pressure (PSI) and IoUsage where the files are, and none of them on v1.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { figuresFromV1, figuresFromV2 } from '../../../src/cgroups/figures';
import { CgroupReader } from '../../../src/cgroups/reader';
import { criContract } from '../../../src/cri/contract';
import { objectFromInspect } from '../../../src/object-store/shim-objects';
import { podSandboxStatsOf } from '../../../src/stats/pod-stats';
import { StatsCollector } from '../../../src/stats/stats-collector';
import { containerStatsOf } from '../../../src/stats/stats-convert';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker } from '../../support/fake-docker';
import { inspectDoc, runningState } from '../../support/fixtures/docker-container';
import {
  layOutV2Host,
  podParentFor,
  V2_CONTAINER_ID,
  V2_CONTAINER_PID,
  V2_FIXTURES,
  V2_PAUSE_ID,
  V2_PAUSE_PID,
  type V2Host,
} from '../../support/cgroup-v2-host';

const hosts: V2Host[] = [];
after(() => {
  for (const h of hosts) fs.rmSync(h.root, { recursive: true, force: true });
});

const POD_LABELS = { 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': 'prod', 'io.kubernetes.pod.uid': 'uid1' };

function objects(parent: string) {
  const pause = objectFromInspect(inspectDoc({
    Id: V2_PAUSE_ID,
    Name: '/k8s_POD_web_prod_uid1_0',
    State: runningState(undefined, { Pid: V2_PAUSE_PID }),
    HostConfig: { CgroupParent: parent, NetworkMode: 'default' },
    Config: { Labels: { ...POD_LABELS, 'io.kubernetes.docker.type': 'podsandbox' } },
  }), 'pause:3.10')!;
  const app = objectFromInspect(inspectDoc({
    Id: V2_CONTAINER_ID,
    Name: '/k8s_app_web_prod_uid1_0',
    State: runningState(undefined, { Pid: V2_CONTAINER_PID }),
    HostConfig: { CgroupParent: parent, NetworkMode: `container:${V2_PAUSE_ID}` },
    Config: { Labels: { ...POD_LABELS, 'io.kubernetes.docker.type': 'container', 'io.kubernetes.sandbox.id': V2_PAUSE_ID } },
  }), 'busybox')!;
  return { pause, app };
}

const psi = (someUs: number, fullUs: number) => ({ Some: someUs, Full: fullUs });
const totals = (p: { Some?: { Total?: unknown } | null; Full?: { Total?: unknown } | null } | null | undefined) => p && { Some: p.Some?.Total, Full: p.Full?.Total };

for (const driver of ['cgroupfs', 'systemd'] as const) {
  describe(`stats on a v2 host, Docker's ${driver} driver`, () => {
    const host = layOutV2Host(driver);
    hosts.push(host);
    const reader = new CgroupReader({ driver, log: silentLogger(), procRoot: host.procRoot });
    after(() => reader.close());
    const storage = { mountpoint: '/var/lib/docker/overlay2', writableLayer: () => undefined };
    const collector = new StatsCollector({ docker: new FakeDocker(), cgroupReader: reader, storage });
    const { pause, app } = objects(podParentFor(driver));
    const signal = new AbortController().signal;

    it('ContainerStats carries CPU and memory PSI and IoUsage, with the averages as the kernel wrote them', async () => {
      const stats = (await collector.containerStats(app, signal))!;
      assert.equal(stats.cpu!.usageCoreNanoSeconds!.value, 8432117000);
      assert.equal(stats.memory!.workingSetBytes!.value, 57147392 - 16777216);
      assert.equal(stats.memory!.availableBytes!.value, 134217728 - (57147392 - 16777216));
      assert.deepEqual([stats.swap!.swapUsageBytes!.value, stats.swap!.swapAvailableBytes!.value], [0, 0]);
      assert.deepEqual(stats.cpu!.psi, { Some: { Total: 3271554, Avg10: 1.52, Avg60: 0.87, Avg300: 0.31 }, Full: { Total: 1520043, Avg10: 0.61, Avg60: 0.4, Avg300: 0.12 } });
      assert.deepEqual(totals(stats.memory!.psi), psi(812337, 601245));
      assert.deepEqual(totals(stats.io!.psi), psi(2504127, 2210089));
      assert.equal(stats.io!.timestamp, stats.cpu!.timestamp);
      // Through the wire as kubelet decodes it.
      const rpc = criContract().runtime.v1.RuntimeService.service.ContainerStats;
      const decoded = rpc.responseDeserialize(rpc.responseSerialize({ stats })) as { stats: { io: { psi: { Full: { Total: string; Avg10: number } } } } };
      assert.deepEqual(decoded.stats.io.psi.Full, { Total: '2210089', Avg10: 0.3, Avg60: 0.18, Avg300: 0.04 });
    });

    it('PodSandboxStats: the pod cgroup\'s own PSI and IoUsage, and each container\'s', async () => {
      const pod = await podSandboxStatsOf(collector, pause, [app], signal);
      const linux = pod.linux!;
      assert.equal(linux.process!.processCount!.value, 8, 'the pod cgroup, not the sum');
      assert.deepEqual(totals(linux.cpu!.psi), psi(3402211, 1588310));
      assert.deepEqual(totals(linux.memory!.psi), psi(812337, 601245));
      assert.deepEqual(totals(linux.io!.psi), psi(2519877, 2224001));
      assert.deepEqual(totals(linux.containers![0]!.io!.psi), psi(2504127, 2210089));
    });

    it('a pod without a cgroup of its own reports no PSI (stall times do not add up), and its containers still do', async () => {
      const fresh = new StatsCollector({ docker: new FakeDocker(), cgroupReader: new CgroupReader({ driver, log: silentLogger(), procRoot: host.procRoot }), storage });
      const { pause: bare, app: member } = objects('');
      const pod = await podSandboxStatsOf(fresh, bare, [member], signal);
      assert.equal(pod.linux!.cpu!.psi, undefined);
      assert.equal(pod.linux!.io, undefined);
      assert.ok(pod.linux!.containers![0]!.cpu!.psi);
    });
  });
}

describe('PSI only where the pressure files are', () => {
  const read = (dir: string) => Object.fromEntries(fs.readdirSync(dir).map((n) => [n, fs.readFileSync(path.join(dir, n), 'utf8')]));
  const statsOf = (sample: ReturnType<typeof figuresFromV1> | undefined) => containerStatsOf({ attributes: { id: 'c1' }, sample, nanoCores: undefined, layer: undefined, timestamp: '1' });
  it('v2 files give psi and io; v1 files, and a stopped container, give neither field, never zeros', () => {
    const v2 = statsOf(figuresFromV2(read(path.join(V2_FIXTURES, 'container'))));
    assert.deepEqual([totals(v2.cpu!.psi), totals(v2.io?.psi)], [psi(3271554, 1520043), psi(2504127, 2210089)]);
    const v1 = statsOf(figuresFromV1(read(path.resolve(__dirname, '../../../../test/fixtures/pod-metrics/v1'))));
    assert.ok(v1.cpu!.usageCoreNanoSeconds);
    assert.deepEqual(['psi' in v1.cpu!, 'psi' in v1.memory!, 'io' in v1], [false, false, false]);
    assert.equal('io' in statsOf(undefined), false);
  });
});
