// The kubenet network plugin through the shim, on Debian's CNI plugins and the host's real
// iptables: not ready until a pod CIDR arrives; then pods on cbr0 with addresses from the CIDR,
// reaching each other and the node, host ports on 127.0.0.1 and the node's address through the
// shim's own NAT chains, surviving a shim restart; and nothing of a pod left once it is gone.
// At the end the test removes what kubenet keeps for the node (its chains, cbr0, IPAM files).
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { before, describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import type { PodSandboxConfig } from '../../src/cri/types';
import { hostAddresses } from '../../src/network/host-addresses';
import { HostportManager } from '../../src/network/hostport/hostport-manager';
import { hostRunner } from '../../src/network/hostport/runner';
import { KUBENET_BRIDGE } from '../../src/network/kubenet/kubenet-plugin';
import { removeKubenetRules } from '../../src/network/kubenet/kubenet-rules';
import { rejectsWith } from '../support/client';
import { CNI_BIN_DIR } from '../support/cni-network';
import { useShim } from '../support/fixture';
import { freeLoopbackPort, httpGet } from '../support/net-probe';
import { waitFor } from '../support/poll';
import { tempDir, type ShimProcess } from '../support/shim';
import { busybox, SLEEP_FOREVER } from '../support/pods';

const IPAM_DIR = '/var/lib/cni/networks/kubenet';

function iptablesLines(text: string): string[] {
  const all = execFileSync('iptables-save', { encoding: 'utf8' }) + execFileSync('ip6tables-save', { encoding: 'utf8' });
  return all.split('\n').filter((l) => l.includes(text));
}

function vethsOnBridge(): string[] {
  try {
    return execFileSync('ip', ['-o', 'link', 'show', 'master', KUBENET_BRIDGE], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

function reservations(): string[] {
  return fs.existsSync(IPAM_DIR) ? fs.readdirSync(IPAM_DIR).filter((f) => f !== 'lock' && !f.startsWith('last_reserved_ip')) : [];
}

describe('kubenet network plugin', () => {
  const third = randomBytes(1)[0]!;
  const podCidr = `10.235.${third}.0/24`;
  const gateway = `10.235.${third}.1`;
  const cacheDir = tempDir('kubenet-cache');
  const root = tempDir('kubenet-root');
  const args = ['--network-plugin=kubenet', `--cni-bin-dir=${CNI_BIN_DIR}`, `--cni-cache-dir=${cacheDir}`];
  const ipamDirExisted = fs.existsSync(IPAM_DIR);
  let shim: ShimProcess;
  let counter = 0;

  const podConfig = (extra: Partial<PodSandboxConfig> = {}): PodSandboxConfig => {
    counter++;
    return { metadata: { name: `kn${counter}-${f.run}`, namespace: 'kubenet-test', uid: `${f.run}-${counter}`, attempt: 0 }, labels: f.labels(), ...extra };
  };
  const podWith = async (extra: Partial<PodSandboxConfig>, command: string[]): Promise<{ pod: string; ctr: string; ip: string }> => {
    const config = podConfig(extra);
    const { podSandboxId: pod } = await shim.client.runtime.RunPodSandbox({ config });
    const { containerId: ctr } = await shim.client.runtime.CreateContainer({ podSandboxId: pod, config: busybox(f.run, 'c', { command, logPath: '' }), sandboxConfig: config });
    await shim.client.runtime.StartContainer({ containerId: ctr });
    const { status } = await shim.client.runtime.PodSandboxStatus({ podSandboxId: pod });
    return { pod, ctr, ip: status!.network!.ip };
  };
  const sh = async (ctr: string, script: string): Promise<string> => {
    const r = await shim.client.runtime.ExecSync({ containerId: ctr, cmd: ['sh', '-c', script], timeout: 15 });
    return r.stdout.toString() + r.stderr.toString();
  };
  const remove = async (pod: string): Promise<void> => {
    await shim.client.runtime.StopPodSandbox({ podSandboxId: pod });
    await shim.client.runtime.RemovePodSandbox({ podSandboxId: pod });
  };

  const f = useShim({ args, rootDir: root });
  before(() => {
    shim = f.shim;
  });
  // What kubenet keeps for the node, once the fixture stopped the shims and swept the pods.
  f.onCleanUp(async () => {
    await new HostportManager({ runner: hostRunner, portHolder: null }).removeAll();
    await removeKubenetRules(hostRunner);
    execFileSync('sh', ['-c', `ip link del ${KUBENET_BRIDGE} 2>/dev/null || true`]);
    if (!ipamDirExisted) fs.rmSync(IPAM_DIR, { recursive: true, force: true });
    fs.rmSync(cacheDir, { recursive: true, force: true });
    fs.rmSync(root, { recursive: true, force: true });
    assert.deepEqual(iptablesLines('CDS-'), [], 'no chain of ours is left on the host');
  });

  it('is not ready until UpdateRuntimeConfig gives a pod CIDR', async () => {
    const s = await shim.client.runtime.Status({});
    const net = s.status!.conditions.find((c) => c.type === 'NetworkReady')!;
    assert.deepEqual([net.status, net.reason], [false, 'NetworkPluginNotReady']);
    assert.match(net.message, /no pod CIDR yet/);
    await assert.rejects(shim.client.runtime.RunPodSandbox({ config: podConfig() }), rejectsWith(Code.UNAVAILABLE, /no pod CIDR/));
    await shim.client.runtime.UpdateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr } } });
    const ready = (await shim.client.runtime.Status({})).status!.conditions.find((c) => c.type === 'NetworkReady')!;
    assert.equal(ready.status, true, ready.message);
    await waitFor('kubenet’s masquerade and forward rules', () => iptablesLines('CDS-KUBENET-FWD').some((l) => l.includes(podCidr)));
  });

  it('puts pods on cbr0 with addresses from the CIDR; they reach each other, the node, and serve host ports', async () => {
    const server = http.createServer((_q, r) => r.end('from-the-node'));
    await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
    const nodePort = (server.address() as AddressInfo).port;
    const hostPort = await freeLoopbackPort();
    const a = await podWith({}, SLEEP_FOREVER.command);
    const b = await podWith({ portMappings: [{ protocol: 'TCP', containerPort: 8080, hostPort, hostIp: '' }] }, ['httpd', '-f', '-p', '8080', '-h', '/etc']);
    try {
      for (const ip of [a.ip, b.ip]) assert.ok(ip.startsWith(`10.235.${third}.`), `${ip} in ${podCidr}`);
      const fromB = await waitFor('pod a to reach pod b', async () => {
        const out = await sh(a.ctr, `printf 'GET /passwd HTTP/1.0\\r\\n\\r\\n' | nc -w 2 ${b.ip} 8080`);
        return /\nroot:/.test(out) ? out : undefined;
      });
      assert.match(fromB, /^HTTP\/1\.[01] 200/);
      assert.match(await sh(a.ctr, `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 ${gateway} ${nodePort}`), /from-the-node$/);
      assert.match(await waitFor('the host port on 127.0.0.1', () => httpGet('127.0.0.1', hostPort, '/passwd').catch(() => undefined)), /^root:/);
      const nodeAddress = hostAddresses().find((x) => !x.includes(':'))!;
      assert.match(await httpGet(nodeAddress, hostPort, '/passwd'), /^root:/);
      assert.ok(iptablesLines(b.pod).length > 0, 'the host port rules name the pod');
      assert.equal(vethsOnBridge().length, 2);
      assert.equal(reservations().length, 2);
    } finally {
      await new Promise((r) => server.close(r));
      await remove(a.pod);
      await remove(b.pod);
    }
    await assert.rejects(httpGet('127.0.0.1', hostPort, '/passwd'));
    assert.deepEqual(vethsOnBridge(), []);
    assert.deepEqual(reservations(), []);
    assert.deepEqual(iptablesLines(b.pod), []);
    assert.deepEqual(iptablesLines('CDS-HP-'), []);
  });

  it('keeps a pod’s host port working across a shim restart', async () => {
    const hostPort = await freeLoopbackPort();
    const p = await podWith({ portMappings: [{ protocol: 'TCP', containerPort: 8080, hostPort, hostIp: '127.0.0.1' }] }, ['httpd', '-f', '-p', '8080', '-h', '/etc']);
    try {
      await waitFor('the host port', () => httpGet('127.0.0.1', hostPort, '/passwd').catch(() => undefined));
      await shim.stop();
      shim = (await f.startShim({ args, rootDir: root })).shim;
      await shim.client.runtime.UpdateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr } } });
      assert.match(await httpGet('127.0.0.1', hostPort, '/passwd'), /^root:/);
      const { status } = await shim.client.runtime.PodSandboxStatus({ podSandboxId: p.pod });
      assert.equal(status?.network?.ip, p.ip);
    } finally {
      await remove(p.pod);
    }
    await assert.rejects(httpGet('127.0.0.1', hostPort, '/passwd'));
    assert.deepEqual(reservations(), []);
    assert.deepEqual(vethsOnBridge(), []);
  });
});
