// The metrics RPCs against real containers under load: a busy loop, a container that is made
// to take memory and write files, a pod that pings another. Each figure is checked to move the
// right way between two scrapes, to match the kernel's own cgroup file in its unit, to carry as
// many labels as its descriptor, and to be absent when the kernel has no such file here.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import type { Metric__Output, MetricDescriptor__Output, PodSandboxMetrics__Output } from '../../src/cri/types';
import { dockerApi } from '../support/images';
import { waitFor } from '../support/poll';
import { storageLog } from '../support/shim';
import { useShim } from '../support/fixture';
import { busybox, removePodCgroups, runContainer, sh, SLEEP_FOREVER, type TestPod } from '../support/pods';

const MiB = 1024 * 1024;

/** The container's cgroup directory for a v1 controller (or the unified one on v2), from its process. */
async function cgroupDir(id: string, controller: string): Promise<string> {
  const pid = (await dockerApi().getContainer(id).inspect()).State.Pid;
  const lines = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n').map((l) => l.split(':'));
  const v1 = lines.find(([, ctrls]) => ctrls!.split(',').includes(controller));
  if (v1 && fs.existsSync(`/sys/fs/cgroup/${controller}`)) return path.join('/sys/fs/cgroup', controller, v1[2]!);
  return path.join('/sys/fs/cgroup', lines.find(([, ctrls]) => ctrls === '')![2]!);
}

const CGROUP_V2 = !fs.existsSync('/sys/fs/cgroup/memory');
const readNum = (file: string): number => Number(fs.readFileSync(file, 'utf8').trim());
const keyed = (file: string, key: string): number | undefined => {
  const line = fs.readFileSync(file, 'utf8').split('\n').find((l) => l.startsWith(`${key} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
};

type Scrape = PodSandboxMetrics__Output[];

function containerMetric(scrape: Scrape, containerId: string, name: string, extra: string[] = []): Metric__Output | undefined {
  for (const pod of scrape) {
    const c = pod.containerMetrics.find((m) => m.containerId === containerId);
    const m = c?.metrics.find((x) => x.name === name && extra.every((v, i) => x.labelValues[5 + i] === v));
    if (m) return m;
  }
  return undefined;
}
const valueOf = (m: Metric__Output | undefined): number => (m ? Number(m.value!.value) : NaN);

describe('pod metrics RPCs', () => {
  const f = useShim({ behindProxy: true });
  const { run } = f;
  let podA: TestPod;
  let podB: TestPod;
  let descriptors: Map<string, MetricDescriptor__Output>;
  const ids = { busy: '', loader: '', listener: '', pinger: '' };
  const podACgroup = `/cds-test-${run}-metrics`;
  f.onCleanUp(() => removePodCgroups(podACgroup));
  const scrape = async (): Promise<Scrape> => (await f.client.runtime.ListPodSandboxMetrics({})).podMetrics;

  before(async () => {
    [podA, podB] = await Promise.all([f.startPod('metrics-a', { cgroupParent: podACgroup }), f.startPod('metrics-b')]);
    ids.busy = await runContainer(f.client, podA, busybox(run, 'busy', { command: ['sh', '-c', 'while :; do :; done'] }));
    ids.loader = await runContainer(f.client, podA, busybox(run, 'loader', SLEEP_FOREVER));
    ids.pinger = await runContainer(f.client, podA, busybox(run, 'pinger', SLEEP_FOREVER));
    // nc holds a listening socket: one descriptor that is a socket.
    ids.listener = await runContainer(f.client, podB, busybox(run, 'listener', { command: ['nc', '-l', '-p', '7070'] }));
    descriptors = new Map((await f.client.runtime.ListMetricDescriptors({})).descriptors.map((d) => [d.name, d]));
  });

  it('descriptors: cAdvisor names, help text, the base label keys first', () => {
    for (const name of ['container_cpu_usage_seconds_total', 'container_memory_working_set_bytes', 'container_network_receive_bytes_total',
      'container_fs_usage_bytes', 'container_processes', 'container_start_time_seconds', 'container_spec_memory_limit_bytes']) {
      assert.ok(descriptors.has(name), name);
    }
    for (const d of descriptors.values()) {
      assert.ok(d.help.length > 10, `${d.name} has help`);
      assert.deepEqual(d.labelKeys.slice(0, 5), ['pod', 'namespace', 'container', 'id', 'image']);
    }
    assert.deepEqual(descriptors.get('container_network_receive_bytes_total')!.labelKeys.slice(5), ['interface']);
    assert.deepEqual(descriptors.get('container_memory_failures_total')!.labelKeys.slice(5), ['failure_type', 'scope']);
  });

  it('every metric has a descriptor and exactly its label count; pods and containers are named', async () => {
    const s = await scrape();
    const a = s.find((p) => p.podSandboxId === podA.id)!;
    assert.ok(a, 'pod A is listed');
    assert.deepEqual(new Set(a.containerMetrics.map((c) => c.containerId)), new Set([ids.busy, ids.loader, ids.pinger]));
    let checked = 0;
    for (const pod of s) {
      for (const m of [...pod.metrics, ...pod.containerMetrics.flatMap((c) => c.metrics)]) {
        const d = descriptors.get(m.name);
        assert.ok(d, `${m.name} has a descriptor`);
        assert.equal(m.labelValues.length, d.labelKeys.length, `${m.name} label count`);
        checked++;
      }
    }
    assert.ok(checked > 100);
    const busy = containerMetric(s, ids.busy, 'container_cpu_usage_seconds_total')!;
    assert.deepEqual(busy.labelValues.slice(0, 4), ['metrics-a', 'cds-test', 'busy', ids.busy]);
    assert.match(busy.labelValues[4]!, /busybox/);
    assert.equal(busy.metricType, 'COUNTER');
    assert.equal(containerMetric(s, ids.busy, 'container_memory_usage_bytes')!.metricType, 'GAUGE');
    // Pod-level metrics are the network ones, labelled with the sandbox's ID and no container.
    for (const m of a.metrics) {
      assert.match(m.name, /^container_network_/);
      assert.deepEqual(m.labelValues.slice(0, 5), ['metrics-a', 'cds-test', '', podA.id, '']);
    }
    assert.ok(a.metrics.some((m) => m.labelValues[5] === 'eth0'));
  });

  it('cpu: the busy loop\'s seconds grow and agree with cpuacct / cpu.stat', async () => {
    const first = valueOf(containerMetric(await scrape(), ids.busy, 'container_cpu_usage_seconds_total'));
    const later = await waitFor('busy CPU seconds to grow', async () => {
      const v = valueOf(containerMetric(await scrape(), ids.busy, 'container_cpu_usage_seconds_total'));
      return v > first ? v : undefined;
    }, { timeoutMs: 30_000 });
    const dir = await cgroupDir(ids.busy, 'cpuacct');
    const kernelSeconds = CGROUP_V2 ? keyed(path.join(dir, 'cpu.stat'), 'usage_usec')! / 1e6 : readNum(path.join(dir, 'cpuacct.usage')) / 1e9;
    // Whole seconds, read just before the file: at most a couple of seconds behind, never ahead.
    assert.ok(later <= Math.ceil(kernelSeconds) && later >= Math.floor(kernelSeconds) - 2, `metric ${later} s vs kernel ${kernelSeconds} s`);
    const s = await scrape();
    const user = valueOf(containerMetric(s, ids.busy, 'container_cpu_user_seconds_total'));
    const total = valueOf(containerMetric(s, ids.busy, 'container_cpu_usage_seconds_total'));
    assert.ok(user <= total + 1 && user >= 0, `user ${user} within total ${total}`);
    assert.ok(valueOf(containerMetric(s, ids.busy, 'container_cpu_cfs_periods_total')) >= 0);
  });

  it('memory: 24 MiB put in tmpfs raises usage and working set by about that, as memory.usage says', async () => {
    const before = await scrape();
    const ws0 = valueOf(containerMetric(before, ids.loader, 'container_memory_working_set_bytes'));
    await sh(f.client, ids.loader, 'dd if=/dev/zero of=/dev/shm/fill bs=1M count=24 2>/dev/null');
    const after = await scrape();
    const ws1 = valueOf(containerMetric(after, ids.loader, 'container_memory_working_set_bytes'));
    const usage = valueOf(containerMetric(after, ids.loader, 'container_memory_usage_bytes'));
    assert.ok(ws1 - ws0 >= 22 * MiB, `working set grew ${(ws1 - ws0) / MiB} MiB`);
    const dir = await cgroupDir(ids.loader, 'memory');
    const kernel = readNum(path.join(dir, CGROUP_V2 ? 'memory.current' : 'memory.usage_in_bytes'));
    assert.ok(Math.abs(usage - kernel) <= 2 * MiB, `metric ${usage} vs kernel ${kernel} bytes`);
    assert.ok(valueOf(containerMetric(after, ids.loader, 'container_memory_cache')) >= 22 * MiB, 'tmpfs pages are cache (shmem)');
    assert.ok(valueOf(containerMetric(after, ids.loader, 'container_memory_failures_total', ['pgfault', 'container'])) > 0);
    // Unlimited: the spec limit is 0, not the kernel's huge sentinel.
    assert.equal(valueOf(containerMetric(after, ids.loader, 'container_spec_memory_limit_bytes')), 0);
  });

  it('filesystem: 6 MiB written to the container\'s own filesystem shows in its layer usage', async () => {
    const before = valueOf(containerMetric(await scrape(), ids.loader, 'container_fs_usage_bytes'));
    await sh(f.client, ids.loader, 'dd if=/dev/zero of=/var/blob bs=1M count=6 2>/dev/null && sync');
    // The layer walk is cached for 10 s (shared with the stats RPCs).
    const after = await waitFor('layer usage to grow', async () => {
      const v = valueOf(containerMetric(await scrape(), ids.loader, 'container_fs_usage_bytes'));
      return v >= before + 6 * MiB ? v : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500, explain: () => storageLog(f.shim) });
    const s = await scrape();
    const limit = containerMetric(s, ids.loader, 'container_fs_limit_bytes')!;
    assert.ok(valueOf(limit) > after, 'the filesystem is larger than the layer');
    assert.ok(valueOf(containerMetric(s, ids.loader, 'container_fs_inodes_free')) <= valueOf(containerMetric(s, ids.loader, 'container_fs_inodes_total')));
    assert.match(limit.labelValues[5]!, /^(\/dev\/\S+|\d+:\d+)$/);
  });

  it('block I/O: reported exactly when the kernel counts devices for the cgroup', async () => {
    await sh(f.client, ids.loader, 'dd if=/dev/zero of=/var/direct bs=1M count=4 oflag=direct 2>/dev/null || dd if=/dev/zero of=/var/direct bs=1M count=4 conv=fsync 2>/dev/null');
    const dir = await cgroupDir(ids.loader, 'blkio');
    const text = fs.readFileSync(path.join(dir, CGROUP_V2 ? 'io.stat' : 'blkio.throttle.io_service_bytes_recursive'), 'utf8');
    const devices = text.split('\n').filter((l) => /^\d+:\d+ /.test(l));
    const writes = (await scrape()).flatMap((p) => p.containerMetrics).find((c) => c.containerId === ids.loader)!.metrics.filter((m) => m.name === 'container_fs_writes_bytes_total');
    if (devices.length === 0) assert.deepEqual(writes, [], 'no device rows in the cgroup file: no metric, not a 0');
    else assert.ok(writes.length > 0 && writes.some((m) => Number(m.value!.value) > 0));
  });

  it('network: pings from pod A to pod B move both pods\' counters', async () => {
    const { status } = await f.client.runtime.PodSandboxStatus({ podSandboxId: podB.id });
    const ip = status!.network!.ip;
    const eth0 = (s: Scrape, pod: string, name: string): number => valueOf(s.find((p) => p.podSandboxId === pod)!.metrics.find((m) => m.name === name && m.labelValues[5] === 'eth0'));
    const before = await scrape();
    await sh(f.client, ids.pinger, `ping -c 5 -i 0.2 -W 2 ${ip}`);
    const after = await scrape();
    assert.ok(eth0(after, podB.id, 'container_network_receive_packets_total') >= eth0(before, podB.id, 'container_network_receive_packets_total') + 5);
    assert.ok(eth0(after, podB.id, 'container_network_receive_bytes_total') >= eth0(before, podB.id, 'container_network_receive_bytes_total') + 5 * 84);
    assert.ok(eth0(after, podA.id, 'container_network_transmit_packets_total') >= eth0(before, podA.id, 'container_network_transmit_packets_total') + 5);
    assert.equal(eth0(after, podB.id, 'container_network_receive_errors_total'), 0);
  });

  it('processes: counts, threads against pids.current, the listener\'s socket; times in seconds', async () => {
    const s = await scrape();
    assert.equal(valueOf(containerMetric(s, ids.listener, 'container_processes')), 1);
    assert.ok(valueOf(containerMetric(s, ids.listener, 'container_sockets')) >= 1);
    assert.ok(valueOf(containerMetric(s, ids.listener, 'container_file_descriptors')) >= 3);
    const threads = containerMetric(s, ids.listener, 'container_threads');
    const pidsDir = await cgroupDir(ids.listener, 'pids');
    if (fs.existsSync(path.join(pidsDir, 'pids.current'))) assert.equal(valueOf(threads), readNum(path.join(pidsDir, 'pids.current')));
    else assert.equal(threads, undefined);
    const started = Date.parse((await dockerApi().getContainer(ids.listener).inspect()).State.StartedAt) / 1000;
    assert.ok(Math.abs(valueOf(containerMetric(s, ids.listener, 'container_start_time_seconds')) - started) <= 1);
    assert.ok(Math.abs(valueOf(containerMetric(s, ids.listener, 'container_last_seen')) - Date.now() / 1000) <= 5);
  });

  it('a figure the kernel does not have here is absent, not 0', async () => {
    const s = await scrape();
    const memDir = await cgroupDir(ids.loader, 'memory');
    const swapFile = CGROUP_V2 ? 'memory.swap.current' : 'memory.memsw.usage_in_bytes';
    assert.equal(containerMetric(s, ids.loader, 'container_memory_swap') !== undefined, fs.existsSync(path.join(memDir, swapFile)), 'swap iff its file exists');
    const maxFile = CGROUP_V2 ? 'memory.peak' : 'memory.max_usage_in_bytes';
    assert.equal(containerMetric(s, ids.loader, 'container_memory_max_usage_bytes') !== undefined, fs.existsSync(path.join(memDir, maxFile)));
    const oomKnown = CGROUP_V2 ? keyed(path.join(memDir, 'memory.events'), 'oom_kill') : keyed(path.join(memDir, 'memory.oom_control'), 'oom_kill');
    assert.equal(containerMetric(s, ids.loader, 'container_oom_events_total') !== undefined, oomKnown !== undefined);
    // No CFS quota was set: the quota metric is left out rather than reported as 0.
    assert.equal(containerMetric(s, ids.loader, 'container_spec_cpu_quota'), undefined);
    // PSI only where the container's cgroup has its pressure files (v2): on v1 none, never 0.
    assert.equal(containerMetric(s, ids.loader, 'container_pressure_cpu_waiting_seconds_total') !== undefined, CGROUP_V2 && fs.existsSync(path.join(memDir, 'cpu.pressure')));
  });

  it('a stopped container is left out; Stream gives what List gives', async () => {
    const gone = await runContainer(f.client, podB, busybox(run, 'short', SLEEP_FOREVER));
    assert.ok(containerMetric(await scrape(), gone, 'container_processes'));
    await f.client.runtime.StopContainer({ containerId: gone, timeout: 0 });
    const s = await scrape();
    assert.ok(!s.flatMap((p) => p.containerMetrics).some((c) => c.containerId === gone));
    const streamed = (await f.client.runtime.StreamPodSandboxMetrics({})).flatMap((m) => m.podSandboxMetrics);
    const shape = (x: Scrape) => x.map((p) => `${p.podSandboxId}:${p.containerMetrics.map((c) => `${c.containerId}/${c.metrics.length}`).sort().join(',')}`).sort();
    const ours = (x: Scrape) => shape(x.filter((p) => p.podSandboxId === podA.id || p.podSandboxId === podB.id));
    assert.deepEqual(ours(streamed), ours(s));
  });

  it('a scrape, and the two stats lists, send Docker nothing about the pods and containers', async () => {
    const statsLists = () => Promise.all([f.client.runtime.ListContainerStats({}), f.client.runtime.ListPodSandboxStats({})]);
    await scrape();
    await statsLists(); // the first lists inspect each container once, for its cgroup
    const seen = f.proxy!.requests.length;
    await scrape();
    await statsLists();
    await scrape();
    await statsLists();
    const asked = f.proxy!.requests.slice(seen);
    // Other suites share this Docker: the cache re-inspects their containers on their events, and
    // on the containerd store the storage asks Docker once for the size of a stopped container it
    // never saw running (theirs; ours all ran long enough to be seen).
    const othersSize = (r: string): boolean => /\/containers\/json\?.*size=true/.test(r);
    const ours = asked.filter((r) => (/\/containers\/json|\/stats/.test(r) && !othersSize(r)) || [podA.id, podB.id, ...Object.values(ids)].some((id) => r.includes(id)));
    assert.deepEqual(ours, []);
  });
});
