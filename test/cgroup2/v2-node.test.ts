// The cgroup v2 lane's suite: the shim's single executable in a QEMU guest on the unified
// hierarchy, Docker 26 with the systemd cgroup driver, checked from this host over QEMU's port
// forwards against the guest's own kernel files (read through test/cgroup2/guest-files.js).
// Run by test/cgroup2/lane.mjs, which boots the guest and sets CDS_V2_*; skipped otherwise.
// TCG makes the guest 10-20x slower than the host: every call has a deadline of a minute, and
// waits for the kernel or the shim to catch up poll for several.
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Dockerode from 'dockerode';
import type { ContainerConfig, PodSandboxConfig, PsiStats__Output } from '../../src/cri/types';
import { criClient, type CriClient } from '../support/client';
import { newTestRun, testLabels } from '../support/cleanup';
import { waitFor } from '../support/poll';
import { collect, openExecStreams, openStream, parseStatus, spdyConnect } from '../support/streaming-clients';

const CRI = process.env.CDS_V2_CRI;
const FILES_PORT = Number(process.env.CDS_V2_FILES_PORT);
const DOCKER_PORT = Number(process.env.CDS_V2_DOCKER_PORT);
const MiB = 1024 * 1024;
const CALL_MS = 60_000;
const WAIT_MS = 240_000;
const RUNTIME_CGROUP = '/system.slice/cri-docker.service';

const call = () => ({ deadline: Date.now() + CALL_MS });

/** A file of the guest (under /sys/fs/cgroup, /proc or /root), as text. */
function guestFile(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: FILES_PORT, path: `/read?path=${encodeURIComponent(file)}`, timeout: CALL_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        if (res.statusCode === 200) resolve(body);
        else reject(new Error(`guest ${file}: ${res.statusCode} ${body}`));
      });
    });
    req.on('timeout', () => req.destroy(new Error(`guest ${file}: no answer in ${CALL_MS} ms`)));
    req.on('error', reject);
  });
}

async function guestPids(comm: string): Promise<number[]> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: FILES_PORT, path: `/pids?comm=${encodeURIComponent(comm)}`, timeout: CALL_MS }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString()) as number[]));
      })
      .on('error', reject);
  });
}

/** "some ... total=N" of a pressure file. */
function psiTotal(text: string, kind: 'some' | 'full'): number {
  const m = new RegExp(`^${kind} .*total=(\\d+)`, 'm').exec(text);
  assert.ok(m, `no ${kind} line in ${JSON.stringify(text)}`);
  return Number(m[1]);
}
const keyed = (text: string, key: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${key} `));
  assert.ok(line, `no ${key} in ${JSON.stringify(text)}`);
  return Number(line.split(' ')[1]);
};
const num = (v: { value?: string | number } | null | undefined): number => Number(v?.value ?? NaN);

function assertPsi(psi: PsiStats__Output | null | undefined, what: string, kernelAfter: string): void {
  assert.ok(psi?.Some && psi.Full, `${what}: PSI missing (${JSON.stringify(psi)})`);
  const some = Number(psi.Some.Total);
  assert.ok(some <= psiTotal(kernelAfter, 'some'), `${what}: some total ${some} is more than the kernel's later ${psiTotal(kernelAfter, 'some')}`);
}

describe('cgroup v2 node: the shim in a QEMU guest on Docker with the systemd cgroup driver', { skip: CRI ? false : 'run by test/cgroup2/lane.mjs (CDS_TEST_CGROUP2=1), which boots the guest' }, () => {
  const run = newTestRun();
  let client: CriClient;
  let docker: Dockerode;
  const uid = `v2-${run}`;
  // kubelet's pod cgroup as its systemd driver names it for Docker: a slice under kubepods-burstable.slice.
  const parent = `kubepods-burstable-pod${uid.replace(/-/g, '_')}.slice`;
  const podConfig: PodSandboxConfig = {
    metadata: { name: 'v2', namespace: 'cds-v2', uid, attempt: 0 },
    hostname: 'v2',
    logDirectory: '/root/logs',
    labels: testLabels(run),
    linux: { cgroupParent: parent },
  };
  let podId = '';
  let workId = '';
  const container = (name: string, script: string, memory: number, extra: Partial<ContainerConfig> = {}): ContainerConfig => ({
    metadata: { name, attempt: 0 },
    image: { image: 'busybox:local' },
    command: ['sh', '-c', script],
    logPath: `${name}-${run}.log`,
    labels: testLabels(run),
    linux: { resources: { memoryLimitInBytes: String(memory), ...extra.linux?.resources } },
    ...extra,
  });
  const start = async (config: ContainerConfig): Promise<string> => {
    const { containerId } = await client.runtime.CreateContainer({ podSandboxId: podId, config, sandboxConfig: podConfig }, call());
    await client.runtime.StartContainer({ containerId }, call());
    return containerId;
  };
  /** The container's cgroup, from its process's /proc/<pid>/cgroup in the guest. */
  const cgroupOf = async (id: string): Promise<string> => {
    const pid = (await docker.getContainer(id).inspect()).State.Pid;
    const line = (await guestFile(`/proc/${pid}/cgroup`)).trim();
    assert.match(line, /^0::\//, `a v2 process has the one line 0::<path>, not ${line}`);
    return line.slice(3);
  };

  before(async () => {
    client = criClient(CRI!);
    docker = new Dockerode({ host: '127.0.0.1', port: DOCKER_PORT, timeout: CALL_MS });
    ({ podSandboxId: podId } = await client.runtime.RunPodSandbox({ config: podConfig }, { deadline: Date.now() + 3 * CALL_MS }));
    // A web server for the port forward, 16 MiB written and synced (io.stat, io.pressure), a
    // bounded busy loop under half a CPU (cpu.stat, cpu.pressure), then nothing.
    workId = await start(
      container(
        'work',
        'mkdir -p /www && echo hello-from-the-v2-guest > /www/index.html && httpd -p 8080 -h /www; ' +
          'dd if=/dev/zero of=/tmp/io bs=1M count=16 conv=fsync 2>/dev/null; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 3600',
        64 * MiB,
        { linux: { resources: { memoryLimitInBytes: String(64 * MiB), cpuQuota: '50000', cpuPeriod: '100000' } } },
      ),
    );
  });

  after(async () => {
    if (podId) {
      await client.runtime.StopPodSandbox({ podSandboxId: podId }, { deadline: Date.now() + 3 * CALL_MS }).catch(() => undefined);
      await client.runtime.RemovePodSandbox({ podSandboxId: podId }, { deadline: Date.now() + 3 * CALL_MS });
    }
    client?.close();
  });

  it('detects the systemd cgroup driver on the unified hierarchy, and RuntimeConfig says so', async () => {
    assert.match(await guestFile('/proc/mounts'), /^cgroup2 \/sys\/fs\/cgroup cgroup2 /m);
    const info = await docker.info();
    assert.equal(info.CgroupDriver, 'systemd');
    assert.equal(info.CgroupVersion, '2');
    const config = await client.runtime.RuntimeConfig({}, call());
    assert.equal(config.linux?.cgroupDriver, 'SYSTEMD');
    const status = await client.runtime.Status({}, call());
    assert.ok(status.status?.conditions.find((c) => c.type === 'RuntimeReady')?.status, 'RuntimeReady');
  });

  it("puts the pod's containers under kubelet's systemd slices, with their limits in memory.max and cpu.max", async () => {
    const slice = `/kubepods.slice/kubepods-burstable.slice/${parent}`;
    assert.equal(await cgroupOf(workId), `${slice}/docker-${workId}.scope`);
    assert.equal(await cgroupOf(podId), `${slice}/docker-${podId}.scope`);
    const dir = `/sys/fs/cgroup${slice}/docker-${workId}.scope`;
    assert.equal((await guestFile(`${dir}/memory.max`)).trim(), String(64 * MiB));
    assert.equal((await guestFile(`${dir}/cpu.max`)).trim(), '50000 100000');
  });

  it("ContainerStats, PodSandboxStats and ListPodSandboxMetrics carry working set, CPU, PSI and IO from the container's own scope", async () => {
    const dir = `/sys/fs/cgroup${await cgroupOf(workId)}`;
    // Until the dd has been written back and the loop has run a while.
    await waitFor('io.stat to show the 16 MiB written', async () => /wbytes=(\d{8,})/.test(await guestFile(`${dir}/io.stat`)), { timeoutMs: WAIT_MS, intervalMs: 2000 });
    const { stats } = await client.runtime.ContainerStats({ containerId: workId }, call());
    const [cpuStat, memPressure, cpuPressure, ioPressure] = await Promise.all(
      ['cpu.stat', 'memory.pressure', 'cpu.pressure', 'io.pressure'].map((f) => guestFile(`${dir}/${f}`)),
    );
    const usageNs = num(stats?.cpu?.usageCoreNanoSeconds);
    assert.ok(usageNs > 0 && usageNs <= keyed(cpuStat, 'usage_usec') * 1000, `CPU ${usageNs} ns against cpu.stat usage_usec ${keyed(cpuStat, 'usage_usec')} read after`);
    const workingSet = num(stats?.memory?.workingSetBytes);
    assert.ok(workingSet > 0 && workingSet <= 64 * MiB, `working set ${workingSet}`);
    assert.equal(num(stats?.memory?.availableBytes) + workingSet, 64 * MiB, 'available bytes are the limit less the working set');
    assertPsi(stats?.cpu?.psi, 'CPU', cpuPressure!);
    assertPsi(stats?.memory?.psi, 'memory', memPressure!);
    assertPsi(stats?.io?.psi, 'IO', ioPressure!);
    assert.ok(Number(stats!.cpu!.psi!.Some!.Total) > 0, 'a loop held to half a CPU waited for it: cpu some total > 0');
    console.log(`# guest figures: cpu ${usageNs} ns, working set ${workingSet}, PSI cpu ${JSON.stringify(stats?.cpu?.psi?.Some)} memory ${JSON.stringify(stats?.memory?.psi?.Some)} io ${JSON.stringify(stats?.io?.psi?.Some)}`);

    const { stats: podStats } = await client.runtime.PodSandboxStats({ podSandboxId: podId }, call());
    const linux = podStats?.linux;
    assert.ok(num(linux?.cpu?.usageCoreNanoSeconds) >= usageNs, 'the pod used at least what its container did');
    assert.ok(num(linux?.memory?.workingSetBytes) > 0, 'pod working set');
    assert.ok(linux?.cpu?.psi?.Some && linux.memory?.psi?.Some && linux.io?.psi?.Some, `pod PSI: ${JSON.stringify(linux?.io)}`);
    assert.ok(linux?.containers.some((c) => c.attributes?.id === workId), 'the pod stats list the container');

    const { podMetrics } = await client.runtime.ListPodSandboxMetrics({}, call());
    const metrics = podMetrics.find((p) => p.podSandboxId === podId)?.containerMetrics.find((c) => c.containerId === workId)?.metrics ?? [];
    const total = (name: string): number => metrics.filter((m) => m.name === name).reduce((s, m) => s + num(m.value), 0);
    for (const name of ['container_cpu_usage_seconds_total', 'container_memory_working_set_bytes', 'container_fs_writes_bytes_total']) {
      assert.ok(total(name) > 0, `${name} ${total(name)} (of ${metrics.map((m) => m.name).join(' ')})`);
    }
    for (const name of ['container_pressure_cpu_waiting_seconds_total', 'container_pressure_memory_waiting_seconds_total', 'container_pressure_io_waiting_seconds_total']) {
      assert.ok(metrics.some((m) => m.name === name), `${name} is listed`);
    }
  });

  it('reports a container that outgrows its memory limit as OOMKilled, exit code 137', async () => {
    const id = await start(container('oom', 'head -c 200000000 /dev/zero | tail > /dev/null', 16 * MiB));
    const status = await waitFor(
      'the OOM container to exit',
      async () => {
        const { status: s } = await client.runtime.ContainerStatus({ containerId: id }, call());
        return s?.state === 'CONTAINER_EXITED' ? s : undefined;
      },
      { timeoutMs: WAIT_MS, intervalMs: 2000 },
    );
    // The container's scope goes with it; memory.events counts up the tree, so its pod's slice keeps the kill.
    const podEvents = await guestFile(`/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/${parent}/memory.events`);
    const dockerSays = (await docker.getContainer(id).inspect()).State.OOMKilled;
    console.log(`# OOM container: ${status.reason} ${status.exitCode}; the pod slice's oom_kill ${keyed(podEvents, 'oom_kill')}; Docker's OOMKilled ${dockerSays}`);
    assert.equal(status.reason, 'OOMKilled');
    assert.equal(status.exitCode, 137);
    assert.ok(keyed(podEvents, 'oom_kill') >= 1, `the kernel counted the kill: ${podEvents}`);
  });

  it('UpdateContainerResources lands in cpu.max and memory.max', async () => {
    await client.runtime.UpdateContainerResources(
      { containerId: workId, linux: { memoryLimitInBytes: String(128 * MiB), cpuQuota: '20000', cpuPeriod: '100000' } },
      call(),
    );
    const dir = `/sys/fs/cgroup${await cgroupOf(workId)}`;
    assert.equal((await guestFile(`${dir}/memory.max`)).trim(), String(128 * MiB));
    assert.equal((await guestFile(`${dir}/cpu.max`)).trim(), '20000 100000');
  });

  it('runs an exec (ExecSync and over the streaming server) and a port forward', async (t) => {
    // The SPDY connections stay open until closed, and would hold this process after the suite.
    const sockets: Socket[] = [];
    t.after(() => sockets.forEach((s) => s.destroy()));
    const res = await client.runtime.ExecSync({ containerId: workId, cmd: ['cat', '/proc/self/cgroup'], timeout: 50 }, call());
    assert.equal(res.exitCode, 0);
    assert.equal(res.stdout.toString().trim(), '0::/', 'a private cgroup namespace shows the container its own root');

    // The streaming server's URLs name 0.0.0.0, the guest's bind address: the same port is forwarded here.
    const local = (url: string) => url.replace(/^http:\/\/[^/]+/, `http://127.0.0.1:${new URL(url).port}`);
    const { url } = await client.runtime.Exec({ containerId: workId, cmd: ['echo', 'streamed'], stdout: true }, call());
    const exec = await spdyConnect(local(url), ['v4.channel.k8s.io']);
    sockets.push(exec.socket);
    const s = await openExecStreams(exec.conn, { stdout: true });
    assert.equal((await s.stdout).toString(), 'streamed\n');
    assert.equal(parseStatus(await s.error).status, 'Success');

    const pf = await client.runtime.PortForward({ podSandboxId: podId, port: [8080] }, call());
    const { conn: pfConn, socket } = await spdyConnect(local(pf.url), ['portforward.k8s.io']);
    sockets.push(socket);
    const error = await openStream(pfConn, { streamType: 'error', port: '8080', requestID: '0' });
    error.end();
    const data = await openStream(pfConn, { streamType: 'data', port: '8080', requestID: '0' });
    const errorText = collect(error);
    const body = collect(data);
    data.end('GET /index.html HTTP/1.0\r\n\r\n');
    assert.match((await body).toString(), /hello-from-the-v2-guest/);
    assert.equal((await errorText).toString(), '');
  });

  it('starts with cri-dockerd\'s --runtime-cgroups=/system.slice/cri-docker.service', async () => {
    // By the PID start.sh wrote: the process's name is Node's own choice, not the file's.
    const pid = (await guestFile('/root/shim.pid')).trim();
    assert.match(pid, /^\d+$/, 'start.sh started the shim');
    const argv = (await guestFile(`/proc/${pid}/cmdline`)).split('\0');
    assert.ok(argv.includes(`--runtime-cgroups=${RUNTIME_CGROUP}`), argv.join(' '));
    // It answered every call above: start-up with the flag did not fail.
    await client.runtime.Version({}, call());
  });

  it('logged no error in the guest', async () => {
    const errors = (await guestFile('/root/shim.log')).split('\n').filter((l) => /"level":(50|60)/.test(l));
    assert.deepEqual(errors, []);
  });

  // cri-dockerd's meaning of the flag: the Docker daemon's processes go there, under a memory
  // limit (70% of MemTotal, at least 150 MiB), with oom_score_adj -999.
  it('puts dockerd and containerd into --runtime-cgroups with a memory limit below MemTotal', async () => {
    for (const comm of ['dockerd', 'containerd']) {
      const pids = await guestPids(comm);
      assert.ok(pids.length > 0, `${comm} runs`);
      for (const pid of pids) {
        assert.equal((await guestFile(`/proc/${pid}/cgroup`)).trim(), `0::${RUNTIME_CGROUP}`, `${comm} ${pid}`);
        assert.equal((await guestFile(`/proc/${pid}/oom_score_adj`)).trim(), '-999', `${comm} ${pid}'s oom_score_adj`);
      }
    }
    const memTotal = Number(/^MemTotal:\s+(\d+) kB/m.exec(await guestFile('/proc/meminfo'))![1]) * 1024;
    const max = (await guestFile(`/sys/fs/cgroup${RUNTIME_CGROUP}/memory.max`)).trim();
    assert.ok(Number(max) > 0 && Number(max) < memTotal, `memory.max ${max} of MemTotal ${memTotal} (cri-dockerd: 70%)`);
  });
});
