// kubenet's own rules for real, in a test node namespace whose FORWARD policy is DROP as Docker
// sets it: pods reach each other and the outside only with the rules; traffic leaving the
// non-masquerade CIDR leaves with the node's address; removal takes everything away. Also the
// hairpin modes and the MTU pick, against the node namespace's interfaces.
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { applyHairpinMode, bridgePorts } from '../../src/network/kubenet/hairpin';
import { resolveMtu } from '../../src/network/kubenet/mtu';
import { applyKubenetRules, removeKubenetRules } from '../../src/network/kubenet/kubenet-rules';
import { POD_CIDR_V4, POD_CIDR_V6, SERVER_TCP_PORT, TestNode, type TestPod } from '../support/hostport-netns';

const NODE_OUTSIDE = '192.168.251.1';
const OUTSIDE = '192.168.251.2';
/** A probe that expects no answer (isolated pods, no route out) waits this long for one. */
const NO_ANSWER_MS = 1_500;

describe('kubenet rules in a node namespace', () => {
  let node: TestNode;
  let pod1: TestPod;
  let pod2: TestPod;
  let outside: string;

  before(async () => {
    node = await TestNode.create();
    pod1 = await node.addPod('10.250.0.2', 'fd00:250::2');
    pod2 = await node.addPod('10.250.0.3');
    outside = await node.addOutside(NODE_OUTSIDE, OUTSIDE);
    await node.startServer(pod1.ns, 'pod1');
    await node.startServer(outside, 'outside');
    await node.exec(node.node, ['iptables', '-P', 'FORWARD', 'DROP']);
    await node.exec(node.node, ['ip6tables', '-P', 'FORWARD', 'DROP']);
  });

  after(async () => {
    await node?.cleanup();
  });

  it('without the rules, FORWARD DROP stops pod traffic (bridged and routed)', async () => {
    assert.equal(await node.probe(pod2.ns, pod1.ipv4, SERVER_TCP_PORT, 'tcp', NO_ANSWER_MS), 'ERR timeout');
    assert.equal(await node.probe(pod1.ns, OUTSIDE, SERVER_TCP_PORT, 'tcp', NO_ANSWER_MS), 'ERR timeout');
  });

  it('accepts pod traffic and masquerades what leaves the non-masquerade CIDR', async () => {
    await applyKubenetRules(node.runner, { podCidrs: [POD_CIDR_V4, POD_CIDR_V6], nonMasqueradeCidr: '10.0.0.0/8' });
    assert.equal(await node.probe(pod2.ns, pod1.ipv4, SERVER_TCP_PORT), `OK pod1 sees ${pod2.ipv4}`);
    assert.equal(await node.probe(pod1.ns, OUTSIDE, SERVER_TCP_PORT), `OK outside sees ${NODE_OUTSIDE}`);

    const v4 = await node.iptablesSave(4);
    assert.match(v4, /^-A POSTROUTING .*-j CDS-KUBENET-MASQ$/m);
    assert.match(v4, new RegExp(`^-A CDS-KUBENET-MASQ -s ${POD_CIDR_V4.replace(/\./g, '\\.')} ! -d 10\\.0\\.0\\.0/8 .*-j MASQUERADE$`, 'm'));
    const forward = v4.split('\n').filter((l) => l.startsWith('-A FORWARD '));
    assert.match(forward[0] ?? '', /-j CDS-KUBENET-FWD$/, 'our FORWARD jump comes first');
    const v6 = await node.iptablesSave(6);
    assert.match(v6, /^-A CDS-KUBENET-FWD -s fd00:250::\/64 .*-j ACCEPT$/m);
    assert.doesNotMatch(v6, /CDS-KUBENET-MASQ -s .*MASQUERADE/, 'an IPv4 non-masquerade CIDR masquerades IPv4 only');
  });

  it('applying again changes the rules in place, never doubling them', async () => {
    await applyKubenetRules(node.runner, { podCidrs: [POD_CIDR_V4], nonMasqueradeCidr: '192.168.0.0/16' });
    assert.equal(await node.probe(pod1.ns, OUTSIDE, SERVER_TCP_PORT), `OK outside sees ${pod1.ipv4}`);
    const v4 = await node.iptablesSave(4);
    assert.equal(v4.match(/-j CDS-KUBENET-FWD$/gm)?.length, 1);
    assert.equal(v4.match(/-j CDS-KUBENET-MASQ$/gm)?.length, 1);
    assert.equal(v4.match(/^-A CDS-KUBENET-MASQ .*MASQUERADE$/gm)?.length, 1);
    assert.doesNotMatch(await node.iptablesSave(6), /CDS-KUBENET/, 'the IPv6 pod CIDR went, so did its chains');
  });

  it('removal leaves nothing of ours', async () => {
    await removeKubenetRules(node.runner);
    for (const family of [4, 6] as const) assert.doesNotMatch(await node.iptablesSave(family), /CDS-/, `IPv${family}`);
    assert.equal(await node.probe(pod1.ns, OUTSIDE, SERVER_TCP_PORT, 'tcp', NO_ANSWER_MS), 'ERR timeout');
    await removeKubenetRules(node.runner); // again: nothing there, no error
  });

  it('applies the hairpin modes to the bridge and its ports', async () => {
    const sysfs = (veth: string) => node.exec(node.node, ['cat', `/sys/class/net/${veth}/brport/hairpin_mode`]);
    assert.deepEqual((await bridgePorts(node.runner, 'cbr0')).sort(), [pod1.veth, pod2.veth].sort());
    assert.equal((await sysfs(pod1.veth)).trim(), '0');
    await applyHairpinMode(node.runner, 'none', 'cbr0');
    assert.equal((await sysfs(pod1.veth)).trim(), '0');
    await applyHairpinMode(node.runner, 'hairpin-veth', 'cbr0', pod1.veth);
    assert.equal((await sysfs(pod1.veth)).trim(), '1');
    assert.equal((await sysfs(pod2.veth)).trim(), '0', 'only the port named');
    await applyHairpinMode(node.runner, 'hairpin-veth', 'cbr0');
    assert.equal((await sysfs(pod2.veth)).trim(), '1');
    const promisc = async () => (JSON.parse(await node.exec(node.node, ['ip', '-j', 'link', 'show', 'cbr0'])) as Array<{ flags: string[] }>)[0]!.flags.includes('PROMISC');
    assert.equal(await promisc(), false);
    await applyHairpinMode(node.runner, 'promiscuous-bridge', 'cbr0');
    assert.equal(await promisc(), true);
  });

  it('picks the smallest MTU of the interfaces that are up, unless one is given', async () => {
    await node.exec(node.node, ['ip', 'link', 'set', 'up0', 'mtu', '1400']);
    assert.deepEqual(await resolveMtu(node.runner, 0), { mtu: 1400, from: 'up0' });
    assert.deepEqual(await resolveMtu(node.runner, 1450), { mtu: 1450, from: undefined });
  });
});
