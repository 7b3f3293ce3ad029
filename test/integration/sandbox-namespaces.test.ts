// What a sandbox looks like from inside: hostname, resolv.conf, sysctls, host or pod
// namespaces, published ports, security context. Checked by a raw busybox container joined to
// the sandbox's namespaces (the pause image has no shell).
import { strict as assert } from 'node:assert';
import * as os from 'node:os';
import * as http from 'node:http';
import { describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import { rejectsWith } from '../support/client';
import { dockerApi } from '../support/images';
import { freeLoopbackPort } from '../support/net-probe';
import { waitFor } from '../support/poll';
import { useShim } from '../support/fixture';
import { podConfig, removePodCgroups, runBeside, startBeside } from '../support/pods';

function httpGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

describe('inside a pod sandbox', () => {
  const f = useShim();
  const { run } = f;
  // Docker's cgroupfs driver leaves a parent cgroup behind once its last container is gone.
  f.onCleanUp(() => removePodCgroups(`cds-test-${run}`));

  async function runSandbox(extra: Parameters<typeof podConfig>[1]): Promise<string> {
    const { podSandboxId } = await f.client.runtime.RunPodSandbox({ config: podConfig(run, extra) });
    f.trackPod(podSandboxId);
    return podSandboxId;
  }

  it('has the hostname, DNS config and sysctls it was given, in its own namespaces', async () => {
    const id = await runSandbox({
      hostname: 'inside-host',
      dnsConfig: { servers: ['10.96.0.10', '10.96.0.11'], searches: ['ns.svc.cluster.local', 'svc.cluster.local'], options: ['ndots:5', 'edns0'] },
      linux: { sysctls: { 'net.ipv4.ip_unprivileged_port_start': '1000', 'kernel.shm_rmid_forced': '1' } },
    });
    const inside = await runBeside(
      run,
      id,
      'hostname; cat /etc/resolv.conf; cat /proc/sys/net/ipv4/ip_unprivileged_port_start /proc/sys/kernel/shm_rmid_forced; ' +
        'for n in net pid ipc; do readlink /proc/self/ns/$n; done; cat /proc/1/cmdline',
      { network: true, pid: true, ipc: true },
    );
    const lines = inside.trim().split('\n');
    assert.equal(lines[0], 'inside-host');
    assert.ok(lines.includes('nameserver 10.96.0.10') && lines.includes('nameserver 10.96.0.11'), inside);
    assert.ok(lines.includes('search ns.svc.cluster.local svc.cluster.local'), inside);
    assert.ok(lines.includes('options ndots:5 edns0'), inside);
    assert.ok(lines.includes('1000'), 'net sysctl applied');
    assert.ok(lines.includes('1'), 'ipc sysctl applied');
    assert.match(inside, /\/pause/, 'the pod has its own PID namespace with pause as PID 1');

    const host = await runBeside(run, undefined, 'for n in net pid ipc; do readlink /proc/self/ns/$n; done', {
      network: true,
      pid: true,
      ipc: true,
      host: true,
    });
    for (const ns of host.trim().split('\n')) assert.ok(!lines.includes(ns), `sandbox does not share the host's ${ns}`);
  });

  it('shares the host’s network, PID and IPC namespaces when asked', async () => {
    const id = await runSandbox({
      dnsConfig: { servers: ['10.96.0.10'], searches: [], options: [] },
      linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'NODE', ipc: 'NODE' } } },
    });
    const inside = await runBeside(run, id, 'for n in net pid ipc; do readlink /proc/self/ns/$n; done; cat /etc/resolv.conf', {
      network: true,
      pid: true,
      ipc: true,
    });
    const host = await runBeside(run, undefined, 'for n in net pid ipc; do readlink /proc/self/ns/$n; done', {
      network: true,
      pid: true,
      ipc: true,
      host: true,
    });
    assert.deepEqual(inside.trim().split('\n').slice(0, 3), host.trim().split('\n'));
    assert.match(inside, /nameserver 10\.96\.0\.10/);

    const { status } = await f.client.runtime.PodSandboxStatus({ podSandboxId: id });
    assert.equal(status?.linux?.namespaces?.options?.network, 'NODE');
    assert.equal(status?.linux?.namespaces?.options?.pid, 'NODE');
    assert.equal(status?.linux?.namespaces?.options?.ipc, 'NODE');
    // A host-network pod reports the node's own address (that of the default route's interface).
    const nodeAddresses = Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).filter((a) => !a.internal).map((a) => a.address));
    assert.ok(nodeAddresses.includes(status?.network?.ip ?? ''), `${status?.network?.ip} is one of the node's addresses ${nodeAddresses.join(', ')}`);
  });

  it('publishes port mappings on 127.0.0.1', async () => {
    const hostPort = await freeLoopbackPort();
    const id = await runSandbox({ portMappings: [{ protocol: 'TCP', containerPort: 8080, hostPort, hostIp: '127.0.0.1' }] });
    const listener = await startBeside(run, id, 'mkdir -p /www && echo pong-from-pod > /www/index.html && exec httpd -f -p 8080 -h /www');
    try {
      const body = await waitFor('the published port to answer', async () => httpGet(`http://127.0.0.1:${hostPort}/`), { timeoutMs: 20_000 });
      assert.equal(body.trim(), 'pong-from-pod');
      const inspect = await dockerApi().getContainer(id).inspect();
      assert.deepEqual(inspect.HostConfig.PortBindings, { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: String(hostPort) }] });
    } finally {
      await dockerApi().getContainer(listener).remove({ force: true });
    }
  });

  it('applies the security context, cgroup parent, resources and shm to the pause container', async () => {
    const id = await runSandbox({
      linux: {
        cgroupParent: `/cds-test-${run}`,
        securityContext: {
          runAsUser: { value: '65534' },
          runAsGroup: { value: '65534' },
          readonlyRootfs: true,
          supplementalGroups: ['1234', '5678'],
          seccomp: { profileType: 'Unconfined' },
          selinuxOptions: { user: 'system_u', role: 'system_r', type: 'spc_t', level: 's0' },
        },
        resources: { cpuShares: '512', memoryLimitInBytes: String(64 * 1024 * 1024), cpuPeriod: '100000', cpuQuota: '50000' },
      },
    });
    const c = await dockerApi().getContainer(id).inspect();
    assert.equal(c.Config.User, '65534:65534');
    assert.equal(c.HostConfig.ReadonlyRootfs, true);
    assert.deepEqual(c.HostConfig.GroupAdd, ['1234', '5678']);
    assert.ok((c.HostConfig.SecurityOpt as string[]).includes('seccomp=unconfined'));
    assert.ok((c.HostConfig.SecurityOpt as string[]).includes('label=type:spc_t'));
    assert.equal(c.HostConfig.CgroupParent, `/cds-test-${run}`);
    assert.equal(c.HostConfig.CpuShares, 512);
    assert.equal(c.HostConfig.Memory, 64 * 1024 * 1024);
    assert.equal(c.HostConfig.CpuQuota, 50000);
    assert.equal(c.State.Running, true);
    // The pause process really runs as the requested user.
    const uid = await runBeside(run, id, 'stat -c %u /proc/1', { pid: true });
    assert.equal(uid.trim(), '65534');
  });

  it('updates the pause container’s resources, and says what Docker cannot update', async () => {
    const id = await runSandbox({});
    await f.client.runtime.UpdatePodSandboxResources({
      podSandboxId: id,
      resources: { cpuShares: '256', cpuQuota: '20000', cpuPeriod: '100000', memoryLimitInBytes: String(128 * 1024 * 1024) },
      overhead: { cpuShares: '10' },
    });
    const c = await dockerApi().getContainer(id).inspect();
    assert.equal(c.HostConfig.CpuShares, 256);
    assert.equal(c.HostConfig.CpuQuota, 20000);
    assert.equal(c.HostConfig.Memory, 128 * 1024 * 1024);

    await assert.rejects(
      f.client.runtime.UpdatePodSandboxResources({
        podSandboxId: id,
        resources: { cpuShares: '300', hugepageLimits: [{ pageSize: '2MB', limit: '4194304' }], unified: { 'memory.high': '1' } },
      }),
      rejectsWith(Code.UNIMPLEMENTED, /resources\.hugepage_limits, resources\.unified.*nothing was changed/),
    );
    assert.equal((await dockerApi().getContainer(id).inspect()).HostConfig.CpuShares, 256, 'nothing applied');
    // kubelet lists every hugepage size with limit 0 when the pod asks for none: that is no request.
    await f.client.runtime.UpdatePodSandboxResources({
      podSandboxId: id,
      resources: { cpuShares: '320', hugepageLimits: [{ pageSize: '2MB', limit: '0' }, { pageSize: '1GB', limit: '0' }] },
    });
    assert.equal((await dockerApi().getContainer(id).inspect()).HostConfig.CpuShares, 320);
    await assert.rejects(
      f.client.runtime.UpdatePodSandboxResources({ podSandboxId: id, resources: { cpuShares: '-5' } }),
      rejectsWith(Code.INVALID_ARGUMENT, /resources\.cpu_shares/),
    );
    await assert.rejects(
      f.client.runtime.UpdatePodSandboxResources({ podSandboxId: 'e'.repeat(64), resources: { cpuShares: '300' } }),
      rejectsWith(Code.NOT_FOUND),
    );
  });
});
