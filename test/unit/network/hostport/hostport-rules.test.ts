import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from '../../../../src/errors';
import type { PortMapping } from '../../../../src/network/network-host';
import { setTimeout as nextTimer } from 'node:timers/promises';
import { ensureJumpLines, parseSave, removeJumpLines, ruleChain, ruleTarget } from '../../../../src/network/hostport/iptables';
import {
  base32,
  findConflict,
  hasHostPorts,
  HostPortIndex,
  isMappingChain,
  mappingChainName,
  mappingsFor,
  MAX_CHAIN_NAME,
  portsToHold,
  renderGuard,
  renderNat,
  renderRemoval,
  ruleSandbox,
  validatePod,
  type PodHostports,
} from '../../../../src/network/hostport/hostport-rules';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const tcp = (hostPort: number, containerPort: number, hostIp = ''): PortMapping => ({ protocol: 'TCP', hostPort, containerPort, hostIp });

function pod(sandboxId: string, ips: string[], portMappings: PortMapping[]): PodHostports {
  return { sandboxId, ips, portMappings };
}

describe('host port chain names', () => {
  it('base32 follows RFC 4648 (no padding)', () => {
    assert.equal(base32(Buffer.from('f')), 'MY');
    assert.equal(base32(Buffer.from('foobar')), 'MZXW6YTBOI');
  });
  it('are deterministic, fit iptables and name what identifies a mapping', () => {
    const name = mappingChainName(A, tcp(8080, 80));
    assert.equal(name, mappingChainName(A, tcp(8080, 80)));
    assert.ok(name.length <= MAX_CHAIN_NAME, name);
    assert.match(name, /^CDS-HP-[A-Z2-7]{16}$/);
    assert.ok(isMappingChain(name));
    const others = [
      mappingChainName(B, tcp(8080, 80)),
      mappingChainName(A, tcp(8081, 80)),
      mappingChainName(A, { ...tcp(8080, 80), protocol: 'UDP' }),
      mappingChainName(A, tcp(8080, 80, '10.0.0.1')),
    ];
    assert.equal(new Set([name, ...others]).size, 5);
    // The container port is what the chain does, not what it is: it can change in place.
    assert.equal(mappingChainName(A, tcp(8080, 81)), name);
  });
  it('are not confused with the fixed chains', () => {
    assert.equal(isMappingChain('CDS-HOSTPORTS'), false);
    assert.equal(isMappingChain('CDS-HOSTPORTS-SNAT'), false);
    assert.equal(isMappingChain('KUBE-HP-ABCDEFGHIJKLMNOP'), false);
  });
});

describe('validatePod', () => {
  it('accepts a well-formed pod', () => validatePod(pod(A, ['10.0.0.2', 'fd00::2'], [tcp(80, 80, '10.1.1.1')])));
  const bad: Array<[string, PodHostports]> = [
    ['upper-case id', pod('ABC', ['10.0.0.2'], [])],
    ['id with a newline', pod('abc\n-A INPUT -j ACCEPT', ['10.0.0.2'], [])],
    ['not an IP', pod(A, ['10.0.0.2 -j ACCEPT'], [])],
    ['two IPv4', pod(A, ['10.0.0.2', '10.0.0.3'], [])],
    ['host IP with a rule in it', pod(A, ['10.0.0.2'], [tcp(80, 80, '1.2.3.4\n-A INPUT -j ACCEPT')])],
    ['host port out of range', pod(A, ['10.0.0.2'], [tcp(70000, 80)])],
    ['container port 0', pod(A, ['10.0.0.2'], [tcp(80, 0)])],
    ['fractional port', pod(A, ['10.0.0.2'], [tcp(80.5, 80)])],
    ['protocol', pod(A, ['10.0.0.2'], [{ ...tcp(80, 80), protocol: 'ICMP' as 'TCP' }])],
  ];
  for (const [what, p] of bad) it(`refuses ${what}`, () => assert.throws(() => validatePod(p), InvalidArgumentError));
});

describe('mappingsFor', () => {
  const p = pod(A, ['10.0.0.2', 'fd00::2'], [tcp(80, 8080), tcp(0, 9090), tcp(81, 81, '192.168.1.1'), tcp(82, 82, 'fe80::1'), tcp(80, 8080), tcp(83, 83, '0.0.0.0'), tcp(84, 84, '::')]);
  it('keeps mappings with a host port whose host IP fits the family, once each', () => {
    assert.deepEqual(mappingsFor(p, 4).map((m) => m.mapping.hostPort), [80, 81, 83]);
    assert.deepEqual(mappingsFor(p, 6).map((m) => m.mapping.hostPort), [80, 82, 84]);
    assert.equal(mappingsFor(p, 6)[0]!.podIp, 'fd00::2');
  });
  it('has nothing for a family the pod has no IP in', () => assert.deepEqual(mappingsFor(pod(A, ['10.0.0.2'], [tcp(80, 80)]), 6), []));
  it('tells whether a pod has host ports in some family', () => {
    const p = pod(A, ['10.0.0.2'], [tcp(0, 80), tcp(80, 80, 'fd00::1')]);
    assert.equal(hasHostPorts(p), false);
    assert.equal(hasHostPorts({ ...p, ips: ['10.0.0.2', 'fd00::2'] }), true);
    assert.equal(hasHostPorts({ ...p, ips: ['10.0.0.2', 'fd00::2'] }, [4]), false);
  });
});

describe('findConflict', () => {
  const a = pod(A, ['10.0.0.2'], [tcp(8080, 80)]);
  it('finds the same port and protocol on any address', () => {
    assert.match(findConflict([a], pod(B, ['10.0.0.3'], [tcp(8080, 81)])) ?? '', /TCP\/8080 is already used by pod sandbox aaaaaaaaaaaa/);
    assert.ok(findConflict([a], pod(B, ['10.0.0.3'], [tcp(8080, 81, '10.9.9.9')])));
  });
  it('lets different protocols, host IPs and families share a port number', () => {
    assert.equal(findConflict([a], pod(B, ['10.0.0.3'], [{ ...tcp(8080, 80), protocol: 'UDP' }])), undefined);
    const specific = pod(A, ['10.0.0.2'], [tcp(8080, 80, '10.9.9.9')]);
    assert.equal(findConflict([specific], pod(B, ['10.0.0.3'], [tcp(8080, 80, '10.9.9.8')])), undefined);
    assert.equal(findConflict([a], pod(B, ['fd00::3'], [tcp(8080, 80)])), undefined);
  });
  it('does not compare a pod with itself (an update)', () => assert.equal(findConflict([a], a), undefined));
  it('sees a wildcard against a specific address either way round, and names the holder', () => {
    const specific = pod(A, ['10.0.0.2'], [tcp(8080, 80, '10.9.9.9')]);
    assert.match(findConflict([specific], pod(B, ['10.0.0.3'], [tcp(8080, 80)])) ?? '', /TCP\/8080 is already used by pod sandbox aaaaaaaaaaaa/);
    assert.match(findConflict([specific], pod(B, ['10.0.0.3'], [tcp(8080, 80, '0.0.0.0')])) ?? '', /aaaaaaaaaaaa/);
    assert.match(findConflict([a], pod(B, ['10.0.0.3'], [tcp(8080, 80, '10.9.9.9')])) ?? '', /TCP\/8080 on 10\.9\.9\.9 is already used/);
    // '::' is IPv6's wildcard only: it does not take the IPv4 port.
    assert.equal(findConflict([pod(A, ['10.0.0.2', 'fd00::2'], [tcp(8080, 80, '::')])], pod(B, ['10.0.0.3'], [tcp(8080, 80)])), undefined);
  });
});

describe('HostPortIndex', () => {
  it('keeps the pods recorded so far, and skips the ports of the pod checked', () => {
    const index = new HostPortIndex();
    const a = pod(A, ['10.0.0.2'], [tcp(8080, 80, '10.9.9.9'), tcp(8080, 80, '10.9.9.8')]);
    index.add(a);
    assert.equal(index.conflict(a), undefined);
    assert.equal(index.conflict(pod(A, ['10.0.0.2'], [tcp(8080, 80)])), undefined, 'an update of the same pod');
    assert.match(index.conflict(pod(B, ['10.0.0.3'], [tcp(8080, 80)])) ?? '', /aaaaaaaaaaaa/);
    assert.equal(index.conflict(pod(B, ['10.0.0.3'], [tcp(8080, 80, '10.9.9.7')])), undefined);
    index.add(pod(B, ['10.0.0.3'], [tcp(8080, 80, '10.9.9.7')]));
    assert.match(index.conflict(pod(A, ['10.0.0.2'], [tcp(8080, 80)])) ?? '', /bbbbbbbbbbbb/, "another pod's address, past the pod's own");
  });
});

/** 4,000 TCP host ports from `first` on every address. */
function manyPorts(sandboxId: string, ip: string, first: number): PodHostports {
  return pod(sandboxId, [ip], Array.from({ length: 4000 }, (_, i) => tcp(first + i, 80)));
}

// Each pod's ports cost one lookup: checking one pod's mappings against every other pod's, for
// every mapping, took 45 s of event loop for the second of two such pods.
describe('two pods of 4,000 host ports each', () => {
  const first = manyPorts(A, '10.0.0.2', 20000);
  it('find their conflict on the last port, and none without it', { timeout: 5000 }, async () => {
    const second = manyPorts(B, '10.0.0.3', 30000);
    second.portMappings = [...second.portMappings, tcp(23999, 80)];
    assert.equal(findConflict([first], second), `host port TCP/23999 is already used by pod sandbox ${A.slice(0, 12)}`);
    assert.equal(findConflict([first], manyPorts(B, '10.0.0.3', 30000)), undefined);
    // The timeout can only be reported once a timer runs: a blocked event loop holds it back.
    await nextTimer(0);
  });
  it('get their rules built', { timeout: 5000 }, async () => {
    const r = renderNat({ family: 4, pods: [first, manyPorts(B, '10.0.0.3', 30000)], natInterface: 'cbr0', existing: undefined, keepForeign: () => true });
    const lines = r.text.split('\n');
    assert.equal(r.chains.length, 8000);
    assert.equal(lines.filter((l) => l.startsWith('-A CDS-HOSTPORTS ')).length, 8000);
    assert.equal(lines.filter((l) => l.startsWith('-A CDS-HP-') && l.includes('DNAT')).length, 8000);
    const again = renderNat({ family: 4, pods: [first], natInterface: 'cbr0', existing: parseSave(r.text).get('nat'), keepForeign: () => false });
    assert.equal(again.deleted.length, 4000);
    await nextTimer(0);
  });
});

describe('portsToHold', () => {
  it('holds TCP and UDP per family, not SCTP', () => {
    const p = pod(A, ['10.0.0.2', 'fd00::2'], [tcp(80, 80), { ...tcp(53, 53), protocol: 'UDP' }, { ...tcp(99, 99), protocol: 'SCTP' }, tcp(81, 81, '10.1.1.1')]);
    assert.deepEqual(portsToHold(p), [
      { family: 4, protocol: 'tcp', hostIp: '', hostPort: 80 },
      { family: 4, protocol: 'udp', hostIp: '', hostPort: 53 },
      { family: 4, protocol: 'tcp', hostIp: '10.1.1.1', hostPort: 81 },
      { family: 6, protocol: 'tcp', hostIp: '', hostPort: 80 },
      { family: 6, protocol: 'udp', hostIp: '', hostPort: 53 },
    ]);
  });
});

describe('renderNat', () => {
  const p = pod(A, ['10.0.0.2'], [tcp(8080, 80), { protocol: 'UDP', hostPort: 53, containerPort: 5353, hostIp: '192.168.1.10' }]);
  const chainTcp = mappingChainName(A, p.portMappings[0]!);
  const chainUdp = mappingChainName(A, p.portMappings[1]!);

  it('writes the whole layout for a fresh table', () => {
    const r = renderNat({ family: 4, pods: [p], natInterface: 'cbr0', existing: undefined, keepForeign: () => true });
    const tag = `cds-sandbox=${A}`;
    assert.equal(
      r.text,
      [
        '*nat',
        ':CDS-HOSTPORTS - [0:0]',
        ':CDS-HOSTPORTS-SNAT - [0:0]',
        `:${chainTcp} - [0:0]`,
        `:${chainUdp} - [0:0]`,
        '-A PREROUTING -m comment --comment "cds hostport portals" -m addrtype --dst-type LOCAL -j CDS-HOSTPORTS',
        '-A OUTPUT -m comment --comment "cds hostport portals" -m addrtype --dst-type LOCAL -j CDS-HOSTPORTS',
        '-A POSTROUTING -m comment --comment "cds hostport masquerade" -j CDS-HOSTPORTS-SNAT',
        `-A CDS-HOSTPORTS -p tcp -m tcp --dport 8080 -m comment --comment "${tag} hostport tcp/8080" -j ${chainTcp}`,
        `-A CDS-HOSTPORTS -d 192.168.1.10/32 -p udp -m udp --dport 53 -m comment --comment "${tag} hostport udp/53" -j ${chainUdp}`,
        '-A CDS-HOSTPORTS-SNAT -s 127.0.0.0/8 -o cbr0 -m comment --comment "cds localhost to hostports" -j MASQUERADE',
        `-A CDS-HOSTPORTS-SNAT -s 10.0.0.2/32 -d 10.0.0.2/32 -m comment --comment "${tag} hairpin" -j MASQUERADE`,
        `-A ${chainTcp} -p tcp -m comment --comment "${tag} hostport tcp/8080" -j DNAT --to-destination 10.0.0.2:80`,
        `-A ${chainUdp} -p udp -m comment --comment "${tag} hostport udp/53" -j DNAT --to-destination 10.0.0.2:5353`,
        'COMMIT',
        '',
      ].join('\n'),
    );
    assert.deepEqual(r.chains, [chainTcp, chainUdp]);
    assert.deepEqual(r.deleted, []);
  });

  it('writes IPv6 destinations in brackets and ::1 for localhost', () => {
    const p6 = pod(A, ['fd00::2'], [{ protocol: 'SCTP', hostPort: 9, containerPort: 99, hostIp: '' }]);
    const text = renderNat({ family: 6, pods: [p6], natInterface: 'cbr0', existing: undefined, keepForeign: () => true }).text;
    assert.match(text, /-p sctp -m sctp --dport 9 /);
    assert.match(text, /-j DNAT --to-destination \[fd00::2\]:99\n/);
    assert.match(text, /-s ::1\/128 -o cbr0 /);
    assert.match(text, /-s fd00::2\/128 -d fd00::2\/128 /);
  });

  it('leaves out the localhost rule without a bridge', () => {
    const text = renderNat({ family: 4, pods: [p], existing: undefined, keepForeign: () => true }).text;
    assert.doesNotMatch(text, /127\.0\.0\.0/);
  });

  const saved = (extra: string[]) =>
    parseSave(
      [
        '# Generated by iptables-save',
        '*nat',
        ':PREROUTING ACCEPT [0:0]',
        ':OUTPUT ACCEPT [0:0]',
        ':POSTROUTING ACCEPT [0:0]',
        ':CDS-HOSTPORTS - [0:0]',
        ':CDS-HOSTPORTS-SNAT - [0:0]',
        ...extra,
        'COMMIT',
      ].join('\n'),
    ).get('nat');

  it('keeps jumps that exist and deletes extra copies', () => {
    const existing = saved([
      '-A PREROUTING -m comment --comment "cds hostport portals" -m addrtype --dst-type LOCAL -j CDS-HOSTPORTS',
      '-A PREROUTING -m comment --comment "cds hostport portals" -m addrtype --dst-type LOCAL -j CDS-HOSTPORTS',
      '-A OUTPUT -m addrtype --dst-type LOCAL -j CDS-HOSTPORTS',
      '-A POSTROUTING -j CDS-HOSTPORTS-SNAT',
    ]);
    const lines = renderNat({ family: 4, pods: [p], existing, keepForeign: () => true }).text.split('\n');
    assert.deepEqual(
      lines.filter((l) => /^-[AD] (PREROUTING|OUTPUT|POSTROUTING)/.test(l)),
      ['-D PREROUTING -m comment --comment "cds hostport portals" -m addrtype --dst-type LOCAL -j CDS-HOSTPORTS'],
    );
  });

  it('deletes chains of pods that are gone, and keeps those of unknown pods only while told to', () => {
    const gone = mappingChainName(B, tcp(7000, 70));
    const orphan = 'CDS-HP-AAAAAAAAAAAAAAAA';
    const existing = saved([
      `:${gone} - [0:0]`,
      `:${orphan} - [0:0]`,
      `-A CDS-HOSTPORTS -p tcp -m comment --comment "cds-sandbox=${B} hostport tcp/7000" -m tcp --dport 7000 -j ${gone}`,
      `-A CDS-HOSTPORTS-SNAT -s 10.0.0.3/32 -d 10.0.0.3/32 -m comment --comment "cds-sandbox=${B} hairpin" -j MASQUERADE`,
      `-A ${gone} -p tcp -m comment --comment "cds-sandbox=${B} hostport tcp/7000" -j DNAT --to-destination 10.0.0.3:70`,
    ]);
    const kept = renderNat({ family: 4, pods: [p], existing, keepForeign: () => true });
    assert.deepEqual(kept.deleted, [orphan]);
    assert.ok(kept.chains.includes(gone));
    assert.match(kept.text, new RegExp(`-A CDS-HOSTPORTS .*cds-sandbox=${B}.* -j ${gone}\n`));
    assert.match(kept.text, /-s 10\.0\.0\.3\/32 -d 10\.0\.0\.3\/32/);
    assert.doesNotMatch(kept.text, new RegExp(`^:${gone}`, 'm'), 'a kept chain is not flushed');

    const dropped = renderNat({ family: 4, pods: [p], existing, keepForeign: () => false });
    assert.deepEqual(dropped.deleted.sort(), [gone, orphan].sort());
    assert.doesNotMatch(dropped.text, new RegExp(`cds-sandbox=${B}`));
    assert.match(dropped.text, new RegExp(`^-X ${gone}$`, 'm'));
    // Declared (flushed) before the delete, in the same transaction that drops the rule jumping to it.
    assert.ok(dropped.text.indexOf(`:${gone} - [0:0]`) < dropped.text.indexOf(`-X ${gone}`));
  });

  it('renders nothing from a pod with no host ports but still rebuilds the chains', () => {
    const r = renderNat({ family: 4, pods: [pod(A, ['10.0.0.2'], [tcp(0, 80)])], existing: undefined, keepForeign: () => true });
    assert.deepEqual(r.chains, []);
    assert.doesNotMatch(r.text, /CDS-HP-/);
  });

  it('reads the sandbox back from a rule as iptables-save prints it', () => {
    assert.equal(ruleSandbox(`-A CDS-HOSTPORTS -p tcp -m comment --comment "cds-sandbox=${A} hostport tcp/1" -m tcp --dport 1 -j X`), A);
    assert.equal(ruleSandbox('-A CDS-HOSTPORTS -j X'), undefined);
  });
});

describe('guard and removal', () => {
  it('guards the bridge against martian localhost packets, jumping first from INPUT', () => {
    const text = renderGuard(undefined, 'cbr0');
    assert.match(text, /^\*filter\n:CDS-HOSTPORTS-GUARD - \[0:0\]\n-I INPUT -m comment --comment "cds hostport localnet guard" -j CDS-HOSTPORTS-GUARD\n/);
    assert.match(text, /-A CDS-HOSTPORTS-GUARD -i cbr0 -d 127\.0\.0\.0\/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT .* -j DROP\n/);
  });
  it('removes every chain of ours and every jump to them, nothing else', () => {
    const existing = parseSave(
      [
        '*nat',
        ':PREROUTING ACCEPT [0:0]',
        ':DOCKER - [0:0]',
        ':CDS-HOSTPORTS - [0:0]',
        ':CDS-HP-AAAAAAAAAAAAAAAA - [0:0]',
        '-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER',
        '-A PREROUTING -m comment --comment "cds hostport portals" -m addrtype --dst-type LOCAL -j CDS-HOSTPORTS',
        '-A CDS-HOSTPORTS -p tcp -m tcp --dport 1 -j CDS-HP-AAAAAAAAAAAAAAAA',
        'COMMIT',
      ].join('\n'),
    ).get('nat');
    assert.equal(
      renderRemoval('nat', existing),
      [
        '*nat',
        ':CDS-HOSTPORTS - [0:0]',
        ':CDS-HP-AAAAAAAAAAAAAAAA - [0:0]',
        '-D PREROUTING -m comment --comment "cds hostport portals" -m addrtype --dst-type LOCAL -j CDS-HOSTPORTS',
        '-X CDS-HOSTPORTS',
        '-X CDS-HP-AAAAAAAAAAAAAAAA',
        'COMMIT',
        '',
      ].join('\n'),
    );
    assert.equal(renderRemoval('nat', parseSave('*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n').get('nat')), '');
  });
});

describe('iptables-save parsing', () => {
  const text = ['# x', '*filter', ':INPUT ACCEPT [0:0]', ':X - [0:0]', '-A INPUT -j X', 'COMMIT', '*nat', ':OUTPUT ACCEPT [0:0]', 'COMMIT', ''].join('\n');
  it('splits tables, chains and rules', () => {
    const t = parseSave(text);
    assert.deepEqual(t.get('filter'), { chains: ['INPUT', 'X'], rules: ['-A INPUT -j X'] });
    assert.deepEqual(t.get('nat'), { chains: ['OUTPUT'], rules: [] });
  });
  it('finds the chain a rule appends to', () => {
    assert.equal(ruleChain('-A CDS-HOSTPORTS -p tcp -j X'), 'CDS-HOSTPORTS');
    assert.equal(ruleChain('-A INPUT'), 'INPUT');
  });
  it('finds targets, including goto', () => {
    assert.equal(ruleTarget('-A INPUT -s 1.2.3.4/32 -j DROP'), 'DROP');
    assert.equal(ruleTarget('-A INPUT -g X'), 'X');
    assert.equal(ruleTarget('-A INPUT'), undefined);
  });
  it('ensures and removes jumps by chain and target', () => {
    const filter = parseSave(text).get('filter');
    const jump = { table: 'filter' as const, from: 'INPUT', to: 'X', matches: '' };
    assert.deepEqual(ensureJumpLines(filter, [jump], true), []);
    assert.deepEqual(ensureJumpLines(filter, [{ ...jump, to: 'Y', matches: '-i lo' }], true), ['-I INPUT -i lo -j Y']);
    assert.deepEqual(removeJumpLines(filter, new Set(['X'])), ['-D INPUT -j X']);
  });
});
