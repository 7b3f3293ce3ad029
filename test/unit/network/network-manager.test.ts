import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import pino from 'pino';
import { defaultRouteInterface, pickHostAddresses } from '../../../src/network/host-addresses';
import type { PodDns, PodRef } from '../../../src/network/network-host';
import { NetworkManager } from '../../../src/network/network-manager';
import type { NetworkPlugin, NetworkStatus, PodNetworkStatus, SandboxNetworkMode } from '../../../src/network/network-plugin';

/** A plugin that records its calls; setUp can be told to fail, and is slow enough to overlap. */
class RecordingPlugin implements NetworkPlugin {
  readonly name = 'recording';
  readonly calls: string[] = [];
  cidrs: readonly string[] = [];
  failSetUp = false;
  constructor(readonly sandboxNetworkMode: SandboxNetworkMode) {}
  async setUpPod(pod: PodRef, dns: PodDns | undefined): Promise<PodNetworkStatus> {
    this.calls.push(`setUp ${pod.sandboxId} start ${dns?.servers.join(',') ?? '-'}`);
    await new Promise((r) => setImmediate(r));
    this.calls.push(`setUp ${pod.sandboxId} end`);
    if (this.failSetUp) throw new Error('plugin said no');
    return { ips: ['10.1.0.2'] };
  }
  async tearDownPod(pod: PodRef): Promise<void> {
    this.calls.push(`tearDown ${pod.sandboxId}`);
  }
  async podStatus(pod: PodRef): Promise<PodNetworkStatus> {
    this.calls.push(`status ${pod.sandboxId}`);
    return { ips: ['10.1.0.2', 'fd00::2'] };
  }
  podCidrsChanged(cidrs: readonly string[]): void {
    this.cidrs = cidrs;
  }
  async status(): Promise<NetworkStatus> {
    return { ready: false, reason: 'NetworkPluginNotReady', message: 'no config' };
  }
  async start(): Promise<void> {}
  async close(): Promise<void> {}
}

function pod(id: string): PodRef {
  return { podName: 'web', podNamespace: 'default', podUid: 'u1', sandboxId: id, annotations: {} };
}

function manager(mode: SandboxNetworkMode) {
  const plugin = new RecordingPlugin(mode);
  let cidrs: readonly string[] = [];
  const host = { podCidrs: () => cidrs, setPodCidrs: (c: readonly string[]) => (cidrs = c) };
  const m = new NetworkManager(plugin, host, pino({ level: 'silent' }), () => ['192.0.2.7']);
  return { m, plugin };
}

describe('NetworkManager', () => {
  it('keeps host-network pods away from the plugin and reports the node’s addresses for them', async () => {
    const { m, plugin } = manager('none');
    await m.setUpPod(pod('a'), { hostNetwork: true }, undefined);
    await m.tearDownPod(pod('a'), { hostNetwork: true });
    assert.deepEqual(await m.podIps(pod('a'), { hostNetwork: true }), ['192.0.2.7']);
    assert.deepEqual(plugin.calls, []);
    assert.equal(m.dockerNetworkMode({ hostNetwork: true }), 'host');
    assert.equal(m.dockerPublishesPorts({ hostNetwork: true }), false);
  });

  it('lets the plugin choose the pause container’s mode for other pods', () => {
    assert.equal(manager('none').m.dockerNetworkMode({ hostNetwork: false }), 'none');
    assert.equal(manager('none').m.dockerPublishesPorts({ hostNetwork: false }), false);
    assert.equal(manager('default').m.dockerNetworkMode({ hostNetwork: false }), undefined);
    assert.equal(manager('default').m.dockerPublishesPorts({ hostNetwork: false }), true);
  });

  it('runs one operation per pod at a time, different pods side by side', async () => {
    const { m, plugin } = manager('none');
    await Promise.all([m.setUpPod(pod('a'), { hostNetwork: false }, undefined), m.tearDownPod(pod('a'), { hostNetwork: false }), m.setUpPod(pod('b'), { hostNetwork: false }, { servers: ['10.96.0.10'], searches: [], options: [] })]);
    const a = plugin.calls.filter((c) => c.includes(' a'));
    assert.deepEqual(a, ['setUp a start -', 'setUp a end', 'tearDown a']);
    // b started while a's set-up was still under way
    assert.ok(plugin.calls.indexOf('setUp b start 10.96.0.10') < plugin.calls.indexOf('setUp a end'));
  });

  it('counts calls and failures per operation and passes the plugin’s error through', async () => {
    const { m, plugin } = manager('none');
    plugin.failSetUp = true;
    await assert.rejects(m.setUpPod(pod('a'), { hostNetwork: false }, undefined), /plugin said no/);
    assert.deepEqual(await m.podIps(pod('a'), { hostNetwork: false }), ['10.1.0.2', 'fd00::2']);
    const counts = m.operationCounts();
    assert.equal(counts.setUp.calls, 1);
    assert.equal(counts.setUp.succeeded, 0);
    assert.equal(counts.setUp.failures, 1);
    assert.equal(counts.status.calls, 1);
    assert.equal(counts.status.succeeded, 1);
    assert.equal(counts.status.failures, 0);
    assert.equal(counts.tearDown.calls, 0);
  });

  it('hands pod CIDRs to the host and the plugin, and the plugin’s status through', async () => {
    const { m, plugin } = manager('none');
    m.setPodCidrs(['10.244.1.0/24', 'fd00:1::/64']);
    assert.deepEqual(m.podCidrs, ['10.244.1.0/24', 'fd00:1::/64']);
    assert.deepEqual(plugin.cidrs, ['10.244.1.0/24', 'fd00:1::/64']);
    assert.deepEqual(await m.status(), { ready: false, reason: 'NetworkPluginNotReady', message: 'no config' });
  });
});

describe('host addresses', () => {
  it('finds the default route’s interface in /proc/net/route', () => {
    const table = 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n' +
      'docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n' +
      'eth0\t00000000\t010011AC\t0003\t0\t0\t0\t00000000\t0\t0\t0\n';
    assert.equal(defaultRouteInterface(table), 'eth0');
    assert.equal(defaultRouteInterface(table.split('\n').slice(0, 2).join('\n')), undefined);
  });

  it('picks that interface’s addresses, IPv4 first, without link-local IPv6', () => {
    const addr = (address: string, family: 'IPv4' | 'IPv6', internal = false) => ({ address, family, internal, netmask: '', mac: '', cidr: null }) as never;
    const ifaces = {
      lo: [addr('127.0.0.1', 'IPv4', true)],
      docker0: [addr('172.17.0.1', 'IPv4')],
      eth0: [addr('fe80::1', 'IPv6'), addr('2001:db8::5', 'IPv6'), addr('192.0.2.5', 'IPv4')],
    };
    assert.deepEqual(pickHostAddresses(ifaces, 'eth0'), ['192.0.2.5', '2001:db8::5']);
    assert.deepEqual(pickHostAddresses(ifaces, undefined), ['172.17.0.1', '192.0.2.5', '2001:db8::5']);
  });
});
