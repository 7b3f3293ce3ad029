// PodMetricsCollector over a made-up /proc and cgroup tree (the fixture files laid out as a v1
// and as a v2 host): what it reads, a container whose cgroup vanished, an unreadable file
// logged once, a host-network pod.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import type { PodSandboxMetrics__Output } from '../../../src/cri/types';
import type { ContainerInspect } from '../../../src/docker/types';
import { PodMetricsCollector, type PodTarget } from '../../../src/pod-metrics/metrics-collector';
import { CgroupReader } from '../../../src/cgroups/reader';
import type { Logger } from '../../../src/util/logger';
import { FIGURE_FILES } from '../../../src/cgroups/figures';
import { decodePodMetrics } from '../../support/pod-metrics';
import { tempDir } from '../../support/temp';

const FIXTURES = path.resolve(__dirname, '../../../../test/fixtures/pod-metrics');
const SANDBOX = 'a'.repeat(64);
const APP = 'b'.repeat(64);
const NET_DEV = [
  'Inter-|   Receive |  Transmit',
  ' face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed',
  '    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0',
  '  eth0: 900 9 0 1 0 0 0 0 700 7 0 0 0 0 0 0',
].join('\n');

interface Host {
  root: string;
  proc: string;
  /** The container's cgroup directories, to break them. */
  dirs: string[];
}

/** A /proc and cgroup tree under a temp dir, with the container (pid 200) and its pause (pid 100). */
function makeHost(version: 1 | 2): Host {
  const root = tempDir('pod-metrics');
  const proc = path.join(root, 'proc');
  const cg = path.join(root, 'cgroup');
  const controllers = ['cpu', 'cpuacct', 'memory', 'pids', 'blkio'];
  const mountinfo = version === 1
    ? controllers.map((c, i) => `${30 + i} 25 0:${26 + i} / ${cg}/${c} rw - cgroup cgroup rw,${c}`).join('\n')
    : `29 23 0:26 / ${cg} rw - cgroup2 cgroup2 rw`;
  const write = (p: string, text: string) => (fs.mkdirSync(path.dirname(p), { recursive: true }), fs.writeFileSync(p, text));
  write(path.join(proc, 'self', 'mountinfo'), `${mountinfo}\n`);
  write(path.join(proc, 'partitions'), 'major minor  #blocks  name\n\n 254        0  1000 vda\n');
  const cgroupPath = `/docker/${APP}`;
  write(path.join(proc, '200', 'cgroup'), version === 1 ? controllers.map((c, i) => `${i + 1}:${c}:${cgroupPath}`).join('\n') : `0::${cgroupPath}\n`);
  fs.mkdirSync(path.join(proc, '200', 'fd'), { recursive: true });
  fs.symlinkSync('/dev/null', path.join(proc, '200', 'fd', '0'));
  fs.symlinkSync('socket:[4242]', path.join(proc, '200', 'fd', '3'));
  write(path.join(proc, '100', 'net', 'dev'), NET_DEV);
  const dirs = version === 1 ? controllers.map((c) => path.join(cg, c, cgroupPath)) : [path.join(cg, cgroupPath)];
  for (const name of FIGURE_FILES.all[version]) {
    const dir = version === 1 ? dirs[controllers.indexOf(name.slice(0, name.indexOf('.')))]! : dirs[0]!;
    const src = path.join(FIXTURES, `v${version}`, name);
    if (fs.existsSync(src)) write(path.join(dir, name), fs.readFileSync(src, 'utf8'));
  }
  for (const dir of dirs) write(path.join(dir, 'cgroup.procs'), '200\n');
  return { root, proc, dirs };
}

function inspectOf(id: string, pid: number, name: string, networkMode = 'bridge'): ContainerInspect {
  return {
    Id: id,
    Name: name,
    State: { Running: true, Pid: pid, StartedAt: '2026-01-02T03:04:05.123456789Z' },
    HostConfig: { CgroupParent: '', NetworkMode: networkMode },
    Config: { Image: 'busybox:test', Labels: {} },
  } as unknown as ContainerInspect;
}

function pod(networkMode = 'bridge'): PodTarget {
  return {
    sandbox: inspectOf(SANDBOX, 100, `/k8s_POD_web_prod_uid_0`, networkMode),
    name: 'web',
    namespace: 'prod',
    containers: [{ inspect: inspectOf(APP, 200, '/k8s_app_web_prod_uid_0'), name: 'app' }],
  };
}

/** A caller that never gives up. */
const LIVE = new AbortController().signal;

const readers: CgroupReader[] = [];
after(() => readers.forEach((r) => r.close()));

function cgroupReader(log: Logger, procRoot: string): CgroupReader {
  const reader = new CgroupReader({ driver: 'cgroupfs', log, procRoot });
  readers.push(reader);
  return reader;
}

function collectorFor(host: Host): { collector: PodMetricsCollector; debugLines: () => Array<Record<string, unknown>> } {
  const out: string[] = [];
  const log = pino({ level: 'debug' }, new Writable({ write: (chunk: Buffer, _enc, cb) => (out.push(chunk.toString()), cb()) }));
  const layers = { layerDir: () => undefined, writableLayer: () => ({ bytes: 8192, inodes: 2, atMs: Date.now() }) };
  return {
    collector: new PodMetricsCollector({ cgroupReader: cgroupReader(log, host.proc) }, layers),
    debugLines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** What the collector answers, decoded as a client reads it. */
async function collected(collector: PodMetricsCollector, pods: PodTarget[]): Promise<PodSandboxMetrics__Output[]> {
  return decodePodMetrics((await collector.collect(pods, LIVE)).bytes);
}

/** A metric's value as text, or undefined when the metric is absent. */
function value(metrics: Array<{ name?: string; value?: { value?: unknown } | null }>, name: string): string | undefined {
  const v = metrics.find((m) => m.name === name)?.value?.value;
  return v === undefined ? undefined : String(v);
}

for (const version of [1, 2] as const) {
  describe(`PodMetricsCollector on a cgroup v${version} host`, () => {
    const hosts: Host[] = [];
    after(() => hosts.forEach((h) => fs.rmSync(h.root, { recursive: true, force: true })));
    const host = (): Host => {
      const h = makeHost(version);
      hosts.push(h);
      return h;
    };

    it('reads the container\'s cgroup, processes and times, and the pod\'s network', async () => {
      const { collector } = collectorFor(host());
      const [p] = await collected(collector, [pod()]);
      assert.equal(p!.podSandboxId, SANDBOX);
      const c = p!.containerMetrics![0]!;
      const cm = c.metrics!;
      assert.equal(c.containerId, APP);
      assert.equal(value(cm, 'container_cpu_usage_seconds_total'), version === 1 ? '0' : '2');
      assert.equal(value(cm, 'container_memory_usage_bytes'), version === 1 ? '6082560' : '31457280');
      assert.equal(value(cm, 'container_spec_memory_limit_bytes'), '67108864');
      assert.equal(value(cm, 'container_processes'), '1');
      assert.equal(value(cm, 'container_file_descriptors'), '2');
      assert.equal(value(cm, 'container_sockets'), '1');
      assert.equal(value(cm, 'container_start_time_seconds'), String(Math.floor(Date.parse('2026-01-02T03:04:05Z') / 1000)));
      assert.equal(value(cm, 'container_fs_writes_bytes_total'), version === 1 ? '1048576' : '2097152');
      assert.equal(cm.find((m) => m.name === 'container_fs_writes_bytes_total')!.labelValues![5], '/dev/vda');
      assert.deepEqual(cm[0]!.labelValues!.slice(0, 5), ['web', 'prod', 'app', APP, 'busybox:test']);
      const rx = p!.metrics!.filter((m) => m.name === 'container_network_receive_packets_total');
      assert.deepEqual(rx.map((m) => [m.labelValues, m.value!.value]), [[['web', 'prod', '', SANDBOX, '', 'eth0'], '9']]);
    });

    it('leaves out a container whose cgroup is gone, and keeps the pod', async () => {
      const h = host();
      for (const dir of h.dirs) fs.rmSync(dir, { recursive: true, force: true });
      const [p] = await collected(collectorFor(h).collector, [pod()]);
      assert.deepEqual(p!.containerMetrics, []);
      assert.ok(p!.metrics!.length > 0);
    });

    it('logs an unreadable file once at debug and leaves its metrics out', async () => {
      const h = host();
      const memDir = version === 1 ? h.dirs[2]! : h.dirs[0]!;
      fs.rmSync(path.join(memDir, 'memory.stat'));
      fs.mkdirSync(path.join(memDir, 'memory.stat')); // reading it fails with EISDIR
      const { collector, debugLines } = collectorFor(h);
      const first = (await collected(collector, [pod()]))[0]!.containerMetrics[0]!.metrics;
      await collector.collect([pod()], LIVE);
      assert.equal(value(first, 'container_memory_rss'), undefined);
      assert.ok(value(first, 'container_memory_usage_bytes'));
      const logged = debugLines().filter((l) => String(l.file).endsWith('memory.stat'));
      assert.equal(logged.length, 1);
      assert.equal(logged[0]!.level, 20);
    });

    it('stops reading once its caller gave up, at the next turn of the event loop', async () => {
      const { collector } = collectorFor(host());
      const caller = new AbortController();
      const reason = new Error('the caller went away');
      // Given up while the first pods are read (before the first yield): it answers nothing.
      setImmediate(() => caller.abort(reason));
      const read = collector.collect(Array.from({ length: 50 }, () => pod()), caller.signal);
      await assert.rejects(read, (err) => err === reason);
      await assert.rejects(collector.collect([pod()], caller.signal), (err) => err === reason);
    });

    it('reads the limit files once per inspect document: again for a new one (an update), not for the same', async () => {
      const h = host();
      const { collector } = collectorFor(h);
      const first = pod();
      const limit = async (p: PodTarget) => value((await collected(collector, [p]))[0]!.containerMetrics[0]!.metrics, 'container_spec_memory_limit_bytes');
      assert.equal(await limit(first), '67108864');
      const memDir = version === 1 ? h.dirs[2]! : h.dirs[0]!;
      fs.writeFileSync(path.join(memDir, version === 1 ? 'memory.limit_in_bytes' : 'memory.max'), '134217728\n');
      fs.writeFileSync(path.join(memDir, version === 1 ? 'memory.usage_in_bytes' : 'memory.current'), '4096\n');
      const same = { ...first, containers: first.containers.map((c) => ({ ...c })) };
      assert.equal(await limit(same), '67108864', 'the same document: the limit as first read');
      assert.equal(value((await collected(collector, [same]))[0]!.containerMetrics[0]!.metrics, 'container_memory_usage_bytes'), '4096', 'usage is read on every call');
      const updated = pod();
      assert.equal(await limit(updated), '134217728', 'a new document: read again');
    });

    it('gives a host-network pod no network metrics of the node\'s', async () => {
      const [p] = await collected(collectorFor(host()).collector, [pod('host')]);
      assert.deepEqual(p!.metrics, []);
      assert.equal(p!.containerMetrics!.length, 1);
    });
  });
}
