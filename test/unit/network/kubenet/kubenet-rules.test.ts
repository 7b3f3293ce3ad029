import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from '../../../../src/errors';
import { parseSave } from '../../../../src/network/hostport/iptables';
import { hairpinPlan } from '../../../../src/network/kubenet/hairpin';
import { kubenetNetwork } from '../../../../src/network/kubenet/kubenet-plugin';
import { FALLBACK_MTU, parseIpLinkJson, pickMtu } from '../../../../src/network/kubenet/mtu';
import { renderKubenetRemoval, renderKubenetRules, validateKubenetConfig } from '../../../../src/network/kubenet/kubenet-rules';

const none = { nat: undefined, filter: undefined };

describe('kubenet rules', () => {
  it('masquerades pod traffic leaving the non-masquerade CIDR and accepts pod traffic in FORWARD', () => {
    const text = renderKubenetRules({ podCidrs: ['10.244.1.0/24'], nonMasqueradeCidr: '10.0.0.0/8' }, 4, none);
    assert.equal(
      text,
      [
        '*nat',
        ':CDS-KUBENET-MASQ - [0:0]',
        '-A POSTROUTING -m comment --comment "cds kubenet masquerade" -j CDS-KUBENET-MASQ',
        '-A CDS-KUBENET-MASQ -s 10.244.1.0/24 -d 10.244.1.0/24 -m comment --comment "cds kubenet pod to pod" -j RETURN',
        '-A CDS-KUBENET-MASQ -s 10.244.1.0/24 ! -d 10.0.0.0/8 -m addrtype ! --dst-type LOCAL -m comment --comment "cds kubenet SNAT for outbound traffic from pods" -j MASQUERADE',
        'COMMIT',
        '*filter',
        ':CDS-KUBENET-FWD - [0:0]',
        '-I FORWARD -m comment --comment "cds kubenet forward" -j CDS-KUBENET-FWD',
        '-A CDS-KUBENET-FWD -s 10.244.1.0/24 -m comment --comment "cds kubenet from pods" -j ACCEPT',
        '-A CDS-KUBENET-FWD -d 10.244.1.0/24 -m comment --comment "cds kubenet to pods" -j ACCEPT',
        'COMMIT',
        '',
      ].join('\n'),
    );
  });

  it('does not add the jumps again when they are there', () => {
    const existing = {
      nat: parseSave('*nat\n:POSTROUTING ACCEPT [0:0]\n:CDS-KUBENET-MASQ - [0:0]\n-A POSTROUTING -j CDS-KUBENET-MASQ\nCOMMIT\n').get('nat'),
      filter: parseSave('*filter\n:FORWARD DROP [0:0]\n:CDS-KUBENET-FWD - [0:0]\n-A FORWARD -j CDS-KUBENET-FWD\nCOMMIT\n').get('filter'),
    };
    const text = renderKubenetRules({ podCidrs: ['10.244.1.0/24'], nonMasqueradeCidr: '10.0.0.0/8' }, 4, existing);
    assert.doesNotMatch(text, /(POSTROUTING|FORWARD) /);
  });

  it('masquerades only in the family of the non-masquerade CIDR, and not at all for /0', () => {
    const dual = { podCidrs: ['10.244.1.0/24', 'fd00:244:1::/64'], nonMasqueradeCidr: '10.0.0.0/8' };
    const v6 = renderKubenetRules(dual, 6, none);
    assert.match(v6, /-A CDS-KUBENET-FWD -s fd00:244:1::\/64 .* -j ACCEPT/);
    assert.doesNotMatch(v6, /MASQUERADE/);
    assert.doesNotMatch(v6, /10\.244/);
    assert.doesNotMatch(renderKubenetRules({ ...dual, nonMasqueradeCidr: '0.0.0.0/0' }, 4, none), /MASQUERADE/);
    assert.match(renderKubenetRules({ ...dual, nonMasqueradeCidr: 'fd00::/8' }, 6, none), /-s fd00:244:1::\/64 ! -d fd00::\/8 .* -j MASQUERADE/);
  });

  it('removes a family that has no pod CIDR any more, and everything on removal', () => {
    const existing = {
      nat: parseSave('*nat\n:POSTROUTING ACCEPT [0:0]\n:CDS-KUBENET-MASQ - [0:0]\n-A POSTROUTING -j CDS-KUBENET-MASQ\nCOMMIT\n').get('nat'),
      filter: parseSave('*filter\n:FORWARD DROP [0:0]\n:CDS-KUBENET-FWD - [0:0]\n-A FORWARD -j CDS-KUBENET-FWD\nCOMMIT\n').get('filter'),
    };
    const expected = [
      '*nat',
      ':CDS-KUBENET-MASQ - [0:0]',
      '-D POSTROUTING -j CDS-KUBENET-MASQ',
      '-X CDS-KUBENET-MASQ',
      'COMMIT',
      '*filter',
      ':CDS-KUBENET-FWD - [0:0]',
      '-D FORWARD -j CDS-KUBENET-FWD',
      '-X CDS-KUBENET-FWD',
      'COMMIT',
      '',
    ].join('\n');
    assert.equal(renderKubenetRules({ podCidrs: ['10.244.1.0/24'], nonMasqueradeCidr: '10.0.0.0/8' }, 6, existing), expected);
    assert.equal(renderKubenetRemoval(existing), expected);
    assert.equal(renderKubenetRemoval(none), '');
  });

  it('refuses CIDRs that are not, and two of one family', () => {
    for (const podCidrs of [['10.244.1.0'], ['10.244.1.0/33'], ['10.0.0.0/24\n-A FORWARD -j ACCEPT'], ['10.1.0.0/24', '10.2.0.0/24']]) {
      assert.throws(() => validateKubenetConfig({ podCidrs, nonMasqueradeCidr: '10.0.0.0/8' }), InvalidArgumentError);
    }
    assert.throws(() => validateKubenetConfig({ podCidrs: [], nonMasqueradeCidr: '10/8' }), InvalidArgumentError);
    validateKubenetConfig({ podCidrs: ['10.1.0.0/24', 'fd00::/64'], nonMasqueradeCidr: '10.0.0.0/8' });
  });
});

describe('hairpin mode', () => {
  it('maps each mode to what it needs', () => {
    assert.deepEqual(hairpinPlan('promiscuous-bridge'), { bridgePromisc: true, vethHairpin: false });
    assert.deepEqual(hairpinPlan('hairpin-veth'), { bridgePromisc: false, vethHairpin: true });
    assert.deepEqual(hairpinPlan('none'), { bridgePromisc: false, vethHairpin: false });
  });
});

describe('MTU', () => {
  const link = (name: string, mtu: number, ...flags: string[]) => ({ name, mtu, flags });
  it('takes the smallest MTU of the interfaces that are up, not loopback or point-to-point', () => {
    const links = [
      link('lo', 65536, 'LOOPBACK', 'UP'),
      link('eth0', 9000, 'BROADCAST', 'UP'),
      link('eth1', 1450, 'BROADCAST', 'UP'),
      link('tun0', 1400, 'POINTOPOINT', 'UP'),
      link('eth2', 1300, 'BROADCAST'),
    ];
    assert.deepEqual(pickMtu(links), { mtu: 1450, from: 'eth1' });
  });
  it('falls back to 1460 without a usable interface or below 576', () => {
    assert.deepEqual(pickMtu([link('lo', 65536, 'LOOPBACK', 'UP')]), { mtu: FALLBACK_MTU, from: undefined });
    assert.deepEqual(pickMtu([link('eth0', 500, 'UP')]), { mtu: FALLBACK_MTU, from: undefined });
  });
  it('reads ip -j link output', () => {
    const text = JSON.stringify([
      { ifindex: 1, ifname: 'lo', flags: ['LOOPBACK', 'UP', 'LOWER_UP'], mtu: 65536 },
      { ifindex: 2, ifname: 'eth0', flags: ['BROADCAST', 'MULTICAST', 'UP', 'LOWER_UP'], mtu: 1500 },
      { ifindex: 3 },
    ]);
    assert.deepEqual(parseIpLinkJson(text), [
      { name: 'lo', mtu: 65536, flags: ['LOOPBACK', 'UP', 'LOWER_UP'] },
      { name: 'eth0', mtu: 1500, flags: ['BROADCAST', 'MULTICAST', 'UP', 'LOWER_UP'] },
    ]);
  });
});

describe('kubenet network', () => {
  it('is a cbr0 bridge with host-local over one range per family, a default route each, and bandwidth', () => {
    const net = kubenetNetwork(['10.244.1.0/24', 'fd00:1::/64'], 1450, 'hairpin-veth', '/tmp/ipam');
    assert.equal(net.name, 'kubenet');
    assert.equal(net.cniVersion, '1.0.0');
    assert.deepEqual(net.plugins.map((p) => p.type), ['bridge', 'bandwidth']);
    const bridge = net.plugins[0] as unknown as Record<string, unknown>;
    assert.deepEqual(
      { bridge: bridge.bridge, mtu: bridge.mtu, isGateway: bridge.isGateway, ipMasq: bridge.ipMasq, hairpinMode: bridge.hairpinMode, promiscMode: bridge.promiscMode },
      { bridge: 'cbr0', mtu: 1450, isGateway: true, ipMasq: false, hairpinMode: true, promiscMode: false },
    );
    assert.deepEqual(bridge.ipam, {
      type: 'host-local',
      ranges: [[{ subnet: '10.244.1.0/24' }], [{ subnet: 'fd00:1::/64' }]],
      routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }],
      dataDir: '/tmp/ipam',
    });
    assert.deepEqual(net.plugins[1], { type: 'bandwidth', capabilities: { bandwidth: true } });
    // The cache keeps the list's text: it must describe the same network.
    assert.deepEqual(JSON.parse(net.bytes).plugins, net.plugins);
  });

  it('turns promiscuous-bridge into the bridge’s promiscuous mode, and leaves IPAM’s data dir to host-local by default', () => {
    const bridge = kubenetNetwork(['10.244.1.0/24'], 1500, 'promiscuous-bridge', undefined).plugins[0] as unknown as Record<string, unknown>;
    assert.deepEqual([bridge.hairpinMode, bridge.promiscMode], [false, true]);
    assert.equal((bridge.ipam as Record<string, unknown>).dataDir, undefined);
  });
});
