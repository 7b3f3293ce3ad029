import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { bandwidthOf, capabilityArgs, cniArgs, cniArgsEnv, parseQuantity, runtimeConfigFor, UNLIMITED_BURST } from '../../../../src/network/libcni/args';
import { chooseNetwork, declaredCapabilities, parseNetworkConfig } from '../../../../src/network/libcni/cni-config';
import { parseResult, podIpsOf } from '../../../../src/network/libcni/result';
import { pluginStdin } from '../../../../src/network/libcni/runtime';
import { compareVersions, isSupportedVersion, supportsCheck } from '../../../../src/network/libcni/cni-version';

const pod = { podName: 'web', podNamespace: 'prod', podUid: 'u-1', sandboxId: 'a'.repeat(64), annotations: {} };
const conflist = (name: string, plugins: unknown[], cniVersion = '1.0.0') => JSON.stringify({ cniVersion, name, plugins });

describe('CNI config choice', () => {
  it('reads a .conflist and a single plugin .conf as a list of one', () => {
    const list = parseNetworkConfig('10-a.conflist', conflist('a', [{ type: 'bridge' }, { type: 'portmap', capabilities: { portMappings: true } }]));
    assert.deepEqual(list.plugins.map((p) => p.type), ['bridge', 'portmap']);
    const single = parseNetworkConfig('20-b.conf', JSON.stringify({ cniVersion: '0.3.1', name: 'b', type: 'bridge', bridge: 'br9' }));
    assert.equal(single.name, 'b');
    assert.deepEqual(single.plugins, [{ type: 'bridge', bridge: 'br9' }]);
  });

  it('takes the first file in lexical order that parses and whose binaries exist', () => {
    const files = [
      { name: '30-good.conflist', text: conflist('good', [{ type: 'bridge' }]) },
      { name: '10-broken.conflist', text: '{ not json' },
      { name: '20-missing.conflist', text: conflist('missing', [{ type: 'flannel' }]) },
      { name: 'README.md', text: 'not a config' },
      { name: '40-later.conf', text: JSON.stringify({ cniVersion: '1.0.0', name: 'later', type: 'bridge' }) },
    ];
    const choice = chooseNetwork(files, (type) => type === 'bridge');
    assert.equal(choice.network?.name, 'good');
    assert.equal(choice.skipped.length, 2);
    assert.match(choice.skipped[0]!, /^10-broken.conflist: not JSON/);
    assert.match(choice.skipped[1]!, /^20-missing.conflist: plugin binaries not found: flannel/);
  });

  it('says what is missing when nothing is usable', () => {
    const none = chooseNetwork([], () => true);
    assert.equal(none.network, undefined);
    assert.match((none as { problem: string }).problem, /no network config found/);
    const bad = chooseNetwork([{ name: '10.conflist', text: conflist('x', [{ type: 'bridge' }], '0.2.0') }], () => true);
    assert.match((bad as { problem: string }).problem, /cniVersion 0.2.0 is not supported/);
  });

  it('refuses names and types that could not be file or binary names', () => {
    assert.throws(() => parseNetworkConfig('a.conflist', conflist('../x', [{ type: 'bridge' }])), /name must be/);
    assert.throws(() => parseNetworkConfig('a.conflist', conflist('x', [{ type: '../../bin/sh' }])), /type must be a plugin binary name/);
    assert.throws(() => parseNetworkConfig('a.conflist', conflist('x', [])), /plugins is empty/);
  });

  it('reads the capabilities a plugin declares', () => {
    assert.deepEqual([...declaredCapabilities({ type: 'portmap', capabilities: { portMappings: true, bandwidth: false } })], ['portMappings']);
    assert.deepEqual([...declaredCapabilities({ type: 'bridge' })], []);
  });
});

describe('CNI versions', () => {
  it('compares numerically and knows what each supports', () => {
    assert.ok(compareVersions('0.10.0', '0.4.0') > 0);
    assert.ok(isSupportedVersion('0.3.0') && isSupportedVersion('1.1.0'));
    assert.ok(!isSupportedVersion('0.2.0') && !isSupportedVersion('1.2.0') && !isSupportedVersion('1.0'));
    assert.ok(supportsCheck('0.4.0') && !supportsCheck('0.3.1'));
  });
});

describe('CNI arguments', () => {
  it('passes kubelet’s K8S_* keys in CNI_ARGS', () => {
    assert.equal(cniArgsEnv(cniArgs(pod)), `IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=${'a'.repeat(64)};K8S_POD_UID=u-1`);
  });

  it('reads Kubernetes quantities and the bandwidth annotations', () => {
    assert.equal(parseQuantity('10M'), 10_000_000);
    assert.equal(parseQuantity('1Mi'), 1_048_576);
    assert.equal(parseQuantity('1.5k'), 1500);
    assert.throws(() => parseQuantity('ten'), /not a quantity/);
    assert.deepEqual(bandwidthOf({ 'kubernetes.io/ingress-bandwidth': '1M' }), { ingressRate: 1_000_000, ingressBurst: UNLIMITED_BURST });
    assert.equal(bandwidthOf({}), undefined);
    assert.throws(() => bandwidthOf({ 'kubernetes.io/egress-bandwidth': '10' }), /outside 1k to 1P/);
  });

  it('builds the capability arguments and gives each plugin only what it declares', () => {
    const args = capabilityArgs(
      { ...pod, annotations: { 'kubernetes.io/egress-bandwidth': '2M' } },
      [
        { protocol: 'TCP', containerPort: 80, hostPort: 8080, hostIp: '' },
        { protocol: 'UDP', containerPort: 53, hostPort: 5353, hostIp: '127.0.0.1' },
        { protocol: 'TCP', containerPort: 9000, hostPort: 0, hostIp: '' },
      ],
      ['10.244.1.0/24', 'fd00:1::/64'],
      { servers: ['10.96.0.10'], searches: ['svc.cluster.local'], options: ['ndots:5'] },
    );
    assert.deepEqual(args.portMappings, [
      { hostPort: 8080, containerPort: 80, protocol: 'tcp' },
      { hostPort: 5353, containerPort: 53, protocol: 'udp', hostIP: '127.0.0.1' },
    ]);
    assert.deepEqual(args.ipRanges, [[{ subnet: '10.244.1.0/24' }], [{ subnet: 'fd00:1::/64' }]]);
    assert.deepEqual(args.bandwidth, { egressRate: 2_000_000, egressBurst: UNLIMITED_BURST });
    assert.deepEqual(runtimeConfigFor(new Set(['portMappings']), args), { portMappings: args.portMappings });
    assert.equal(runtimeConfigFor(new Set(), args), undefined);
  });

  it('writes a plugin’s stdin with the list’s name and version, its runtimeConfig and prevResult', () => {
    const prev = parseResult({ cniVersion: '1.0.0', ips: [{ address: '10.1.0.2/24' }] }, '1.0.0');
    const stdin = JSON.parse(pluginStdin({ name: 'net', cniVersion: '1.0.0' }, { type: 'portmap', capabilities: { portMappings: true }, runtimeConfig: { stale: 1 } }, { portMappings: [{ hostPort: 1, containerPort: 2, protocol: 'tcp' }] }, prev)) as Record<string, unknown>;
    assert.equal(stdin.name, 'net');
    assert.equal(stdin.cniVersion, '1.0.0');
    assert.deepEqual(stdin.runtimeConfig, { portMappings: [{ hostPort: 1, containerPort: 2, protocol: 'tcp' }] });
    assert.deepEqual((stdin.prevResult as { ips: unknown }).ips, [{ address: '10.1.0.2/24' }]);
    const bare = JSON.parse(pluginStdin({ name: 'net', cniVersion: '1.0.0' }, { type: 'bridge', runtimeConfig: { stale: 1 } }, {}, undefined)) as Record<string, unknown>;
    assert.equal(bare.runtimeConfig, undefined);
    assert.equal(bare.prevResult, undefined);
  });
});

describe('CNI results', () => {
  it('reads 0.3.1 and 1.0.0 results into one shape', () => {
    const old = parseResult({ cniVersion: '0.3.1', interfaces: [{ name: 'eth0', sandbox: '/proc/1/ns/net' }], ips: [{ version: '4', address: '10.1.0.2/24', gateway: '10.1.0.1', interface: 0 }] }, '0.3.1');
    assert.deepEqual(old.ips, [{ address: '10.1.0.2/24', gateway: '10.1.0.1', interface: 0 }]);
    const now = parseResult({ ips: [{ address: 'fd00::2/64' }], dns: { nameservers: ['10.96.0.10'] } }, '1.0.0');
    assert.equal(now.cniVersion, '1.0.0');
    assert.deepEqual(now.dns, { nameservers: ['10.96.0.10'] });
    assert.throws(() => parseResult({ ips: [{ address: 'nope' }] }, '1.0.0'), /malformed ip/);
  });

  it('reports the first address as primary and the first of the other family next; never the host side', () => {
    const result = parseResult(
      {
        interfaces: [{ name: 'cni0' }, { name: 'veth1' }, { name: 'eth0', sandbox: '/proc/9/ns/net' }],
        ips: [
          { address: '10.88.0.1/16', interface: 0 },
          { address: '10.88.0.5/16', interface: 2 },
          { address: '10.88.0.6/16', interface: 2 },
          { address: 'fd00:88::5/64', interface: 2 },
        ],
      },
      '1.0.0',
    );
    assert.deepEqual(podIpsOf(result), ['10.88.0.5', 'fd00:88::5']);
    assert.deepEqual(podIpsOf(undefined), []);
  });
});
