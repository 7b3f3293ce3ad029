// The stats RPCs against real containers made through the shim: memory a container holds, CPU
// a busy loop burns, pod network traffic, filters, NOT_FOUND, stopped containers, the Stream
// variants, and agreement with Docker's own stats endpoint.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { status as Code } from '@grpc/grpc-js';
import { before, describe, it } from 'node:test';
import type { ContainerStats__Output, PodSandboxStats__Output } from '../../src/cri/types';
import { rejectsWith } from '../support/client';
import { TEST_LABEL, testLabels } from '../support/cleanup';
import { dockerApi } from '../support/images';
import { waitFor } from '../support/poll';
import { useShim } from '../support/fixture';
import { busybox, removePodCgroups, runContainer, sh, SLEEP_FOREVER, waitExited, type TestPod } from '../support/pods';

const MiB = 1024 * 1024;
const num = (v: { value: string } | null | undefined): number => Number(v?.value ?? NaN);

interface DockerStats {
  cpu_stats: { cpu_usage: { total_usage: number } };
  memory_stats: { usage: number; stats: Record<string, number> };
}

async function dockerStats(id: string): Promise<DockerStats> {
  return (await dockerApi().getContainer(id).stats({ stream: false })) as unknown as DockerStats;
}

describe('stats RPCs', () => {
  const f = useShim();
  const { run } = f;
  let podA: TestPod;
  let podB: TestPod;
  const ids = { memory: '', busy: '', writer: '', idle: '', exited: '', pinger: '' };
  // Pod A has a cgroup of its own (as kubelet always gives one), pod B has Docker's default.
  const podACgroup = `/cds-test-${run}-a`;
  // Docker made pod A's parent cgroup in each controller; it is empty once the containers are gone.
  f.onCleanUp(() => removePodCgroups(podACgroup));

  before(async () => {
    [podA, podB] = await Promise.all([f.startPod('stats-a', { cgroupParent: podACgroup }), f.startPod('stats-b')]);
    // 20 MiB in tmpfs is charged to the writer's memory cgroup and cannot be reclaimed as page cache.
    ids.memory = await runContainer(f.client, podA, busybox(run, 'memory', {
      command: ['sh', '-c', 'dd if=/dev/zero of=/dev/shm/fill bs=1M count=20 && sleep 3600'],
      labels: { ...testLabels(run), role: 'memory' },
    }));
    ids.busy = await runContainer(f.client, podA, busybox(run, 'busy', {
      command: ['sh', '-c', 'while :; do :; done'],
      labels: { ...testLabels(run), role: 'busy' },
    }));
    // 3 MiB written into the container's own filesystem lands in its writable layer.
    ids.writer = await runContainer(f.client, podA, busybox(run, 'writer', {
      command: ['sh', '-c', 'dd if=/dev/zero of=/var/blob bs=1M count=3 && sleep 3600'],
    }));
    ids.idle = await runContainer(f.client, podB, busybox(run, 'idle', { ...SLEEP_FOREVER, labels: { ...testLabels(run), role: 'idle' } }));
    ids.exited = await runContainer(f.client, podB, busybox(run, 'exited', { command: ['true'], labels: { ...testLabels(run), role: 'exited' } }));
    await waitExited(f.client, ids.exited);
  });

  const runFilter = (): Record<string, string> => ({ [TEST_LABEL]: run });

  it('memory: a container holding 20 MiB shows a working set of at least that, close to Docker\'s figure', async () => {
    const stats = await waitFor('working set >= 20 MiB', async () => {
      const { stats: s } = await f.client.runtime.ContainerStats({ containerId: ids.memory });
      return num(s?.memory?.workingSetBytes) >= 20 * MiB ? s : undefined;
    });
    assert.equal(stats!.attributes!.id, ids.memory);
    assert.equal(stats!.attributes!.metadata!.name, 'memory');
    assert.equal(stats!.attributes!.labels!.role, 'memory');
    assert.ok(num(stats!.memory!.usageBytes) >= num(stats!.memory!.workingSetBytes));
    // Docker's working set (as `docker stats` computes it: usage less inactive file cache).
    const d = await dockerStats(ids.memory);
    const dockerWorkingSet = d.memory_stats.usage - (d.memory_stats.stats.total_inactive_file ?? 0);
    const ours = num(stats!.memory!.workingSetBytes);
    assert.ok(Math.abs(ours - dockerWorkingSet) <= 4 * MiB, `ours ${ours} vs Docker's ${dockerWorkingSet}`);
  });

  it('cpu: a busy loop\'s cumulative time grows between calls and the second call has a rate', async () => {
    const first = (await f.client.runtime.ContainerStats({ containerId: ids.busy })).stats!;
    const before = num(first.cpu!.usageCoreNanoSeconds);
    assert.ok(before > 0);
    const later = await waitFor('CPU time to grow with a rate', async () => {
      const { stats: s } = await f.client.runtime.ContainerStats({ containerId: ids.busy });
      return s && num(s.cpu?.usageCoreNanoSeconds) > before && num(s.cpu?.usageNanoCores) > 0 ? s : undefined;
    });
    // A cumulative counter: Docker's reading, taken between two of ours, lies between them.
    const d = await dockerStats(ids.busy);
    const after = num((await f.client.runtime.ContainerStats({ containerId: ids.busy })).stats!.cpu!.usageCoreNanoSeconds);
    assert.ok(num(later.cpu!.usageCoreNanoSeconds) <= d.cpu_stats.cpu_usage.total_usage);
    assert.ok(d.cpu_stats.cpu_usage.total_usage <= after);
  });

  it('network: pod traffic shows in the pod\'s eth0 counters', async () => {
    const { status } = await f.client.runtime.PodSandboxStatus({ podSandboxId: podB.id });
    const ip = status!.network!.ip;
    assert.ok(ip, 'pod B has an IP');
    const eth0 = async () => (await f.client.runtime.PodSandboxStats({ podSandboxId: podB.id })).stats!.linux!.network!.defaultInterface!;
    const before = await eth0();
    assert.equal(before.name, 'eth0');
    ids.pinger = await runContainer(f.client, podA, busybox(run, 'pinger', SLEEP_FOREVER));
    await sh(f.client, ids.pinger, `ping -c 5 -i 0.2 -W 2 ${ip}`);
    const grown = await waitFor('pod B rx and tx to grow', async () => {
      const now = await eth0();
      return num(now.rxBytes) >= num(before.rxBytes) + 5 * 84 && num(now.txBytes) >= num(before.txBytes) + 5 * 84 ? now : undefined;
    });
    assert.equal(num(grown.rxErrors), 0);
  });

  it('pod stats add up the pod\'s containers and list them inside', async () => {
    const stats = await waitFor('pod A working set to include the 20 MiB', async () => {
      const { stats: s } = await f.client.runtime.PodSandboxStats({ podSandboxId: podA.id });
      return s && num(s.linux?.memory?.workingSetBytes) >= 20 * MiB ? s : undefined;
    });
    assert.equal(stats.attributes!.id, podA.id);
    assert.equal(stats.attributes!.metadata!.name, 'stats-a');
    const inside = stats.linux!.containers!.map((c) => c.attributes!.id);
    for (const id of [ids.memory, ids.busy]) assert.ok(inside.includes(id), `pod A lists ${id}`);
    assert.ok(!inside.includes(podA.id), 'the pause container is not among the containers');
    const cpuSum = stats.linux!.containers!.reduce((sum, c) => sum + num(c.cpu!.usageCoreNanoSeconds), 0);
    assert.ok(num(stats.linux!.cpu!.usageCoreNanoSeconds) >= cpuSum * 0.99, 'pod CPU covers its containers');
    // Pod A's figures are its own cgroup's: the pids controller counts the same processes.
    const pidsFile = `/sys/fs/cgroup/pids${podACgroup}/pids.current`;
    assert.ok(fs.existsSync(pidsFile), `${pidsFile} (this machine has cgroup v1 with the pids controller)`);
    assert.equal(num(stats.linux!.process!.processCount), Number(fs.readFileSync(pidsFile, 'utf8').trim()));
    // pause, the two sleeps (the shell execs its last command), the busy loop: at least 4.
    assert.ok(num(stats.linux!.process!.processCount) >= 4);

    // Pod B has no cgroup of its own: its figures add up the pause process and its one running container.
    const b = (await f.client.runtime.PodSandboxStats({ podSandboxId: podB.id })).stats!;
    assert.equal(num(b.linux!.process!.processCount), 2);
    const idle = b.linux!.containers!.find((c) => c.attributes!.id === ids.idle)!;
    assert.ok(num(b.linux!.memory!.workingSetBytes) >= num(idle.memory!.workingSetBytes));
  });

  it('writable layer: what a container writes to its filesystem shows in used bytes and inodes', async () => {
    const stats = await waitFor('writable layer >= 3 MiB', async () => {
      const { stats: s } = await f.client.runtime.ContainerStats({ containerId: ids.writer });
      return s && num(s.writableLayer?.usedBytes) >= 3 * MiB ? s : undefined;
    }, { timeoutMs: 30_000 });
    assert.ok(num(stats.writableLayer!.inodesUsed) >= 2, 'the blob and at least its directory');
    // The filesystem is named as ImageFsInfo names the containers' one, so kubelet can match them.
    const fsInfo = await f.client.images.ImageFsInfo({});
    assert.equal(stats.writableLayer!.fsId!.mountpoint, fsInfo.containerFilesystems[0]!.fsId!.mountpoint);
  });

  it('a stopped container is listed with zero usage, and its own stats answer too', async () => {
    const { stats } = await f.client.runtime.ListContainerStats({ filter: { id: ids.exited, labelSelector: runFilter() } });
    assert.equal(stats.length, 1);
    assert.equal(num(stats[0]!.cpu!.usageCoreNanoSeconds), 0);
    assert.equal(num(stats[0]!.memory!.workingSetBytes), 0);
    assert.ok(stats[0]!.writableLayer, 'the writable layer is still there');
    const single = (await f.client.runtime.ContainerStats({ containerId: ids.exited })).stats!;
    assert.equal(single.attributes!.metadata!.name, 'exited');
  });

  it('filters containers by ID prefix, pod sandbox ID (full or prefix) and label selector', async () => {
    const list = async (filter: object) => {
      const { stats } = await f.client.runtime.ListContainerStats({ filter: { labelSelector: runFilter(), ...filter } });
      return stats.map((s) => s.attributes!.metadata!.name).sort();
    };
    assert.deepEqual(await list({}), ['busy', 'exited', 'idle', 'memory', 'writer', ...(ids.pinger ? ['pinger'] : [])].sort());
    assert.deepEqual(await list({ id: ids.busy.slice(0, 12) }), ['busy']);
    assert.deepEqual(await list({ podSandboxId: podB.id }), ['exited', 'idle']);
    assert.deepEqual(await list({ podSandboxId: podB.id.slice(0, 10) }), ['exited', 'idle']);
    assert.deepEqual(await list({ labelSelector: { ...runFilter(), role: 'memory' } }), ['memory']);
    assert.deepEqual(await list({ podSandboxId: podB.id, labelSelector: { ...runFilter(), role: 'memory' } }), []);
    // IDs that name nothing, whatever they look like, are an empty answer, not an error.
    for (const unknown of ['f'.repeat(64), 'no-such-pod', '../etc']) {
      assert.deepEqual(await list({ id: unknown }), [], unknown);
      assert.deepEqual(await list({ podSandboxId: unknown }), [], unknown);
    }
  });

  it('filters pod sandboxes by ID prefix and label selector', async () => {
    const list = async (filter: object) => {
      const { stats } = await f.client.runtime.ListPodSandboxStats({ filter: { labelSelector: runFilter(), ...filter } });
      return stats.map((s) => s.attributes!.id).sort();
    };
    assert.deepEqual(await list({}), [podA.id, podB.id].sort());
    assert.deepEqual(await list({ id: podB.id.slice(0, 12) }), [podB.id]);
    assert.deepEqual(await list({ labelSelector: { [TEST_LABEL]: 'no-such-run' } }), []);
    for (const unknown of ['f'.repeat(64), 'no-such-pod', '../etc']) assert.deepEqual(await list({ id: unknown }), [], unknown);
  });

  it('the Stream variants give what the List ones give', async () => {
    const filter = { labelSelector: runFilter() };
    const names = (s: ContainerStats__Output[]) => s.map((c) => `${c.attributes!.id}:${JSON.stringify(c.attributes!.labels)}`).sort();
    const listed = (await f.client.runtime.ListContainerStats({ filter })).stats;
    const streamed = (await f.client.runtime.StreamContainerStats({ filter })).flatMap((m) => m.containerStats);
    assert.deepEqual(names(streamed), names(listed));
    const podIds = (s: PodSandboxStats__Output[]) => s.map((p) => `${p.attributes!.id}:${p.linux!.containers!.length}`).sort();
    const listedPods = (await f.client.runtime.ListPodSandboxStats({ filter })).stats;
    const streamedPods = (await f.client.runtime.StreamPodSandboxStats({ filter })).flatMap((m) => m.podSandboxStats);
    assert.deepEqual(podIds(streamedPods), podIds(listedPods));
  });

  it('unknown IDs are NOT_FOUND; malformed ones INVALID_ARGUMENT', async () => {
    const c = f.client.runtime;
    await assert.rejects(c.ContainerStats({ containerId: 'f'.repeat(64) }), rejectsWith(Code.NOT_FOUND, /not found/));
    await assert.rejects(c.PodSandboxStats({ podSandboxId: 'f'.repeat(64) }), rejectsWith(Code.NOT_FOUND, /not found/));
    // A sandbox ID is not a container ID, and the other way round.
    await assert.rejects(c.ContainerStats({ containerId: podA.id }), rejectsWith(Code.NOT_FOUND));
    await assert.rejects(c.PodSandboxStats({ podSandboxId: ids.idle }), rejectsWith(Code.NOT_FOUND));
    await assert.rejects(c.ContainerStats({ containerId: '../etc' }), rejectsWith(Code.INVALID_ARGUMENT, /container_id/));
    await assert.rejects(c.PodSandboxStats({ podSandboxId: '' }), rejectsWith(Code.INVALID_ARGUMENT, /pod_sandbox_id/));
  });
});
