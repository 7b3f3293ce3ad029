// Host ports for real: rules applied by HostportManager inside a test node namespace, traffic
// from the node to its own addresses and to 127.0.0.1, from a pod to itself (hairpin), over
// IPv4 and IPv6, TCP and UDP; removal, a restart (a new manager) and syncAll, removeAll.
import { strict as assert } from 'node:assert';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { PortMapping } from '../../src/network/network-host';
import { HostPortInUseError, HostportManager } from '../../src/network/hostport/hostport-manager';
import { LocalPortHolder } from '../../src/network/hostport/port-holder';
import { mappingChainName, type PodHostports } from '../../src/network/hostport/hostport-rules';
import { applyHairpinMode } from '../../src/network/kubenet/hairpin';
import { NODE_BRIDGE_V4, NODE_UPLINK_V4, NODE_UPLINK_V6, SERVER_TCP_PORT, SERVER_UDP_PORT, TestNode, type TestPod } from '../support/hostport-netns';
import { freeLoopbackPort } from '../support/net-probe';

const ID1 = '1'.repeat(64);
const ID2 = '2'.repeat(64);
const ID3 = '3'.repeat(64);

function mapping(protocol: PortMapping['protocol'], hostPort: number, containerPort: number, hostIp = ''): PortMapping {
  return { protocol, hostPort, containerPort, hostIp };
}

describe('host port manager in a node namespace', () => {
  let node: TestNode;
  let pod1: TestPod;
  let pod2: TestPod;
  let spec1: PodHostports;
  let spec2: PodHostports;
  let manager: HostportManager;

  before(async () => {
    node = await TestNode.create();
    pod1 = await node.addPod('10.250.0.2', 'fd00:250::2');
    pod2 = await node.addPod('10.250.0.3');
    await node.startServer(pod1.ns, 'pod1');
    await node.startServer(pod2.ns, 'pod2');
    // The bridge would not send the pod's own packets back out of the port they came in on.
    await applyHairpinMode(node.runner, 'hairpin-veth', 'cbr0');
    spec1 = {
      sandboxId: ID1,
      ips: [pod1.ipv4, pod1.ipv6!],
      portMappings: [
        mapping('TCP', 9090, SERVER_TCP_PORT),
        mapping('UDP', 9053, SERVER_UDP_PORT),
        mapping('TCP', 9091, SERVER_TCP_PORT, NODE_UPLINK_V4),
        mapping('TCP', 0, SERVER_TCP_PORT),
      ],
    };
    spec2 = { sandboxId: ID2, ips: [pod2.ipv4], portMappings: [mapping('TCP', 9190, SERVER_TCP_PORT)] };
    manager = new HostportManager({ runner: node.runner, natInterface: 'cbr0', portHolder: null });
  });

  after(async () => {
    await node?.cleanup();
  });

  it('has nothing of ours before the first pod', async () => {
    assert.doesNotMatch(await node.iptablesSave(4), /CDS-/);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9090), 'ERR ECONNREFUSED');
  });

  it('forwards the node address, the bridge address and 127.0.0.1 to the pod', async () => {
    await manager.add(spec1);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9090), `OK pod1 sees ${NODE_UPLINK_V4}`);
    assert.equal(await node.probe(node.node, NODE_BRIDGE_V4, 9090), `OK pod1 sees ${NODE_BRIDGE_V4}`);
    // From localhost: masqueraded out of cbr0, which needs route_localnet there.
    assert.equal(await node.probe(node.node, '127.0.0.1', 9090), `OK pod1 sees ${NODE_BRIDGE_V4}`);
    assert.equal((await node.exec(node.node, ['sysctl', '-n', 'net.ipv4.conf.cbr0.route_localnet'])).trim(), '1');
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9053, 'udp'), `OK pod1 sees ${NODE_UPLINK_V4}`);
  });

  it('honours the host IP of a mapping', async () => {
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9091), `OK pod1 sees ${NODE_UPLINK_V4}`);
    assert.equal(await node.probe(node.node, NODE_BRIDGE_V4, 9091), 'ERR ECONNREFUSED');
  });

  it('forwards IPv6 with ip6tables', async () => {
    assert.equal(await node.probe(node.node, NODE_UPLINK_V6, 9090), `OK pod1 sees ${NODE_UPLINK_V6}`);
    assert.match(await node.iptablesSave(6), new RegExp(`--to-destination \\[${pod1.ipv6}\\]:${SERVER_TCP_PORT}`));
    assert.doesNotMatch(await node.iptablesSave(6), /9091/, 'a host IP of the other family stays out');
  });

  it('lets a pod reach itself through its host port (hairpin, masqueraded)', async () => {
    assert.equal(await node.probe(pod1.ns, NODE_UPLINK_V4, 9090), `OK pod1 sees ${NODE_BRIDGE_V4}`);
  });

  it('has each jump once and one chain per mapping', async () => {
    await manager.add(spec1); // again: an update must not duplicate anything
    const saved = await node.iptablesSave(4);
    for (const from of ['PREROUTING', 'OUTPUT']) {
      assert.equal(saved.match(new RegExp(`^-A ${from} .*-j CDS-HOSTPORTS$`, 'gm'))?.length, 1, from);
    }
    assert.equal(saved.match(/^-A POSTROUTING .*-j CDS-HOSTPORTS-SNAT$/gm)?.length, 1);
    assert.equal(saved.match(/^-A INPUT .*-j CDS-HOSTPORTS-GUARD$/gm)?.length, 1);
    const chains = saved.match(/^:CDS-HP-\S+/gm)?.map((c) => c.slice(1)).sort();
    const expected = spec1.portMappings.filter((m) => m.hostPort !== 0).map((m) => mappingChainName(ID1, m)).sort();
    assert.deepEqual(chains, expected);
  });

  it('refuses a second pod on a host port that is taken, and takes a free one', async () => {
    await assert.rejects(manager.add({ ...spec2, sandboxId: ID3, portMappings: [mapping('TCP', 9090, SERVER_TCP_PORT)] }), HostPortInUseError);
    await manager.add(spec2);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9190), `OK pod2 sees ${NODE_UPLINK_V4}`);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9090), `OK pod1 sees ${NODE_UPLINK_V4}`);
  });

  it('removes one pod and leaves the other', async () => {
    await manager.remove(ID1);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9090), 'ERR ECONNREFUSED');
    assert.equal(await node.probe(node.node, '127.0.0.1', 9090), 'ERR ECONNREFUSED');
    assert.equal(await node.probe(node.node, NODE_UPLINK_V6, 9090), 'ERR ECONNREFUSED');
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9190), `OK pod2 sees ${NODE_UPLINK_V4}`);
    const saved = (await node.iptablesSave(4)) + (await node.iptablesSave(6));
    assert.doesNotMatch(saved, new RegExp(`cds-sandbox=${ID1}`));
    assert.doesNotMatch(saved, new RegExp(mappingChainName(ID1, spec1.portMappings[0]!)));
    await manager.remove(ID1); // again: nothing to do, no error
  });

  it('after a restart, keeps unknown pods until syncAll says which still run', async () => {
    await manager.add(spec1);
    const restarted = new HostportManager({ runner: node.runner, natInterface: 'cbr0', portHolder: null });
    // Before syncAll: removing a pod it was never told about drops that pod's rules only.
    await restarted.remove(ID2);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9190), 'ERR ECONNREFUSED');
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9090), `OK pod1 sees ${NODE_UPLINK_V4}`);
    await manager.add(spec2); // the old instance puts pod2 back (as if it were still running)

    const fresh = new HostportManager({ runner: node.runner, natInterface: 'cbr0', portHolder: null });
    const report = await fresh.syncAll([spec1]);
    assert.deepEqual(report.conflicts, []);
    assert.equal(report.chains[4], 3);
    assert.deepEqual(report.deleted, [mappingChainName(ID2, spec2.portMappings[0]!)]);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9090), `OK pod1 sees ${NODE_UPLINK_V4}`);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V6, 9090), `OK pod1 sees ${NODE_UPLINK_V6}`);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9190), 'ERR ECONNREFUSED');
    assert.doesNotMatch(await node.iptablesSave(4), new RegExp(`cds-sandbox=${ID2}`));
    manager = fresh;
  });

  it('syncAll restores rules someone flushed', async () => {
    await node.exec(node.node, ['iptables', '-t', 'nat', '-F', 'CDS-HOSTPORTS']);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9090), 'ERR ECONNREFUSED');
    await manager.syncAll([spec1, spec2]);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9090), `OK pod1 sees ${NODE_UPLINK_V4}`);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9190), `OK pod2 sees ${NODE_UPLINK_V4}`);
  });

  it('removeAll leaves no chain or rule of ours in either family', async () => {
    await manager.removeAll();
    for (const family of [4, 6] as const) assert.doesNotMatch(await node.iptablesSave(family), /CDS-/, `IPv${family}`);
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9090), 'ERR ECONNREFUSED');
    assert.equal(await node.probe(node.node, NODE_UPLINK_V4, 9190), 'ERR ECONNREFUSED');
    await manager.removeAll(); // again: nothing there, no error
  });
});

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

// The holder binds in the shim's own namespace (here: the test's), on 127.0.0.1 only; the rules
// still go to the test node namespace.
describe('host port manager holding ports open', () => {
  let node: TestNode;
  let manager: HostportManager;
  const blockers: net.Server[] = [];

  before(async () => {
    node = await TestNode.create();
    manager = new HostportManager({ runner: node.runner, natInterface: 'cbr0', portHolder: new LocalPortHolder(), families: [4] });
  });

  after(async () => {
    for (const b of blockers) b.close();
    try {
      await manager?.removeAll();
    } finally {
      await node?.cleanup();
    }
  });

  it('fails a pod whose host port another process has, leaving no rules', async () => {
    const port = await freeLoopbackPort();
    const blocker = net.createServer();
    blockers.push(blocker);
    await new Promise<void>((r) => blocker.listen(port, '127.0.0.1', r));
    const pod: PodHostports = { sandboxId: ID1, ips: ['10.250.0.2'], portMappings: [mapping('TCP', port, 80, '127.0.0.1')] };
    await assert.rejects(manager.add(pod), (err: unknown) => err instanceof HostPortInUseError && /EADDRINUSE/.test(err.message));
    assert.doesNotMatch(await node.iptablesSave(4), /CDS-HP-/);
    assert.deepEqual(manager.heldPorts(), []);

    await new Promise<void>((r) => blocker.close(() => r()));
    await manager.add(pod);
    assert.deepEqual(manager.heldPorts(), [`tcp4/127.0.0.1:${port}`]);
    assert.equal(await canListen(port), false, 'the manager holds the port');
    assert.match(await node.iptablesSave(4), new RegExp(`-d 127\\.0\\.0\\.1/32 -p tcp .*--dport ${port} `));

    await manager.remove(ID1);
    assert.deepEqual(manager.heldPorts(), []);
    assert.equal(await canListen(port), true, 'removal frees the port');
  });

  it('holds UDP ports too, and frees them on removeAll', async () => {
    const port = await freeLoopbackPort();
    await manager.add({ sandboxId: ID2, ips: ['10.250.0.3'], portMappings: [mapping('UDP', port, 53, '127.0.0.1')] });
    assert.deepEqual(manager.heldPorts(), [`udp4/127.0.0.1:${port}`]);
    await manager.removeAll();
    assert.deepEqual(manager.heldPorts(), []);
  });
});
