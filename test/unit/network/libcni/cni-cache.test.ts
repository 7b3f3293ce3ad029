// The CNI result cache as a node leaves it: ours, and libcni's (cri-dockerd) in any spec
// version, torn and foreign files among them; and results and configs of every spec version.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CniNetworkPlugin } from '../../../../src/network/cni/cni-plugin';
import { isLoopbackEntry, isLoopbackOnly, loopbackNetwork, PodAttachments } from '../../../../src/network/libcni/attachments';
import { readCacheDocument, ResultCache } from '../../../../src/network/libcni/cni-cache';
import { parseNetworkConfig } from '../../../../src/network/libcni/cni-config';
import { parseResult, podIpsOf } from '../../../../src/network/libcni/result';
import type { NetworkHost } from '../../../../src/network/network-host';
import { silentLogger } from '../../../../src/util/logger';
import { tempDir } from '../../../support/temp';

const ID = 'c'.repeat(64);
const base64 = (doc: unknown): string => Buffer.from(JSON.stringify(doc)).toString('base64');
/**
 * cri-dockerd's loopback, as libcni caches it: cniVersion 0.2.0, no cniArgs or capabilityArgs,
 * and interface eth0 (cri-dockerd runs every attachment with kubelet's default interface name).
 */
const LIBCNI_LOOPBACK = {
  kind: 'cniCacheV1',
  containerId: ID,
  config: base64({ cniVersion: '0.2.0', name: 'cni-loopback', plugins: [{ type: 'loopback' }] }),
  ifName: 'eth0',
  networkName: 'cni-loopback',
  netns: '/proc/123/ns/net',
  result: { cniVersion: '0.2.0', ip4: { ip: '127.0.0.1/8' }, dns: {} },
};

describe('CNI results of every spec version', () => {
  it('reads 0.1.0/0.2.0 results (ip4, ip6) into the common shape, and their IPs as the pod\'s', () => {
    const old = parseResult({ cniVersion: '0.2.0', ip4: { ip: '10.1.2.3/24', gateway: '10.1.2.1', routes: [{ dst: '0.0.0.0/0' }] }, ip6: { ip: 'fd00::3/64' } }, '0.2.0');
    assert.deepEqual(old.ips, [{ address: '10.1.2.3/24', gateway: '10.1.2.1' }, { address: 'fd00::3/64' }]);
    assert.deepEqual(old.routes, [{ dst: '0.0.0.0/0' }]);
    assert.deepEqual(podIpsOf(old), ['10.1.2.3', 'fd00::3']);
    assert.throws(() => parseResult({ cniVersion: '0.2.0', ip4: { ip: 'nonsense' } }, '0.2.0'), /malformed ip4/);
  });

  it('a cached config may be any spec version, one from the conf dir only what we run', () => {
    const text = JSON.stringify({ cniVersion: '0.2.0', name: 'cni-loopback', plugins: [{ type: 'loopback' }] });
    assert.throws(() => parseNetworkConfig('10-lo.conflist', text), /0\.2\.0 is not supported \(0\.3\.0 to 1\.1\.0\)/);
    assert.equal(parseNetworkConfig('cache of cni-loopback', text, 'cached').cniVersion, '0.2.0');
    assert.throws(() => parseNetworkConfig('cache', text.replace('0.2.0', '9.0.0'), 'cached'), /not supported \(0\.1\.0 to 1\.1\.0\)/);
  });
});

describe('CNI cache documents', () => {
  it('reads libcni\'s entry: absent cniArgs and capabilityArgs are empty, its 0.2.0 result is read', () => {
    const { entry, problem } = readCacheDocument(LIBCNI_LOOPBACK, ID, 'lo');
    assert.equal(problem, undefined);
    assert.deepEqual(entry.cniArgs, []);
    assert.deepEqual(entry.capabilityArgs, {});
    assert.deepEqual(entry.result?.ips, [{ address: '127.0.0.1/8' }]);
  });

  it('leaves out a result it cannot read, and says so; refuses foreign documents', () => {
    const { entry, problem } = readCacheDocument({ ...LIBCNI_LOOPBACK, result: { cniVersion: '1.0.0', ips: [{ address: 'x' }] } }, ID, 'lo');
    assert.equal(entry.result, undefined);
    assert.match(problem!, /result cannot be read/);
    assert.throws(() => readCacheDocument({ ...LIBCNI_LOOPBACK, kind: 'other' }, ID, 'lo'), /not a cniCacheV1/);
    assert.throws(() => readCacheDocument({ ...LIBCNI_LOOPBACK, containerId: 'd'.repeat(64) }, ID, 'lo'), /another container/);
    assert.throws(() => readCacheDocument([], ID, 'lo'), /not a cniCacheV1/);
  });
});

describe('ResultCache.read', () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir('cni-cache');
    fs.mkdirSync(path.join(dir, 'results'), { recursive: true });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads what it can, names the files it cannot use, and follows no symlink', () => {
    const results = path.join(dir, 'results');
    fs.writeFileSync(path.join(results, `cni-loopback-${ID}-lo`), JSON.stringify({ ...LIBCNI_LOOPBACK, ifName: 'lo' }));
    fs.writeFileSync(path.join(results, `torn-${ID}-eth0`), '{"kind":"cniCacheV1","contai');
    fs.writeFileSync(path.join(dir, 'elsewhere'), JSON.stringify({ ...LIBCNI_LOOPBACK, ifName: 'eth0', networkName: 'linked' }));
    fs.symlinkSync(path.join(dir, 'elsewhere'), path.join(results, `linked-${ID}-eth0`));
    const cache = new ResultCache(dir);
    const lo = cache.read(ID, 'lo');
    assert.deepEqual(lo.map((r) => [r.file, r.entry?.networkName, r.problem]), [[`cni-loopback-${ID}-lo`, 'cni-loopback', undefined]]);
    const eth0 = cache.read(ID, 'eth0').sort((a, b) => a.file.localeCompare(b.file));
    assert.deepEqual(eth0.map((r) => [r.file, r.entry]), [[`linked-${ID}-eth0`, undefined], [`torn-${ID}-eth0`, undefined]]);
    assert.match(eth0[0]!.problem!, /ELOOP/);
    assert.deepEqual(cache.forContainer(ID, 'eth0'), []);
    cache.removeFile(`torn-${ID}-eth0`);
    assert.equal(fs.existsSync(path.join(results, `torn-${ID}-eth0`)), false);
    assert.throws(() => cache.removeFile('../elsewhere'), /not a cache file name/);
    assert.deepEqual(cache.read('not-an-id', 'lo'), []);
  });
});

describe("a pod cri-dockerd set up: its loopback's cache file is under eth0 too", () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir('cni-cri-dockerd');
    fs.mkdirSync(path.join(dir, 'results'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'bin'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** cri-dockerd's loopback list, byte for byte as its source has it. */
  const CRI_DOCKERD_LOOPBACK = '{\n  "cniVersion": "0.2.0",\n  "name": "cni-loopback",\n  "plugins":[{\n    "type": "loopback"\n  }]\n}';
  const POD_NETWORK = { cniVersion: '0.4.0', name: 'k8s-pod-network', plugins: [{ type: 'bridge' }, { type: 'portmap', capabilities: { portMappings: true } }] };
  const write = (file: string, doc: unknown): void => fs.writeFileSync(path.join(dir, 'results', file), typeof doc === 'string' ? doc : JSON.stringify(doc));
  /** Libcni's entries as cri-dockerd left them: loopback (its 0.2.0 result has no addresses), then the pod network's. */
  const criDockerdPod = (): void => {
    write(`cni-loopback-${ID}-eth0`, { ...LIBCNI_LOOPBACK, config: Buffer.from(CRI_DOCKERD_LOOPBACK).toString('base64'), result: { cniVersion: '0.2.0', dns: {} } });
    write(`k8s-pod-network-${ID}-eth0`, {
      kind: 'cniCacheV1', containerId: ID, config: base64(POD_NETWORK), ifName: 'eth0', networkName: 'k8s-pod-network',
      result: { cniVersion: '0.4.0', interfaces: [{ name: 'eth0', sandbox: '/proc/1/ns/net' }], ips: [{ version: '4', address: '10.22.0.7/24', interface: 0 }], dns: {} },
    });
  };
  const host: NetworkHost = {
    netnsPath: async () => undefined,
    portMappings: () => [],
    podCidrs: () => [],
    bridgeAddresses: async () => [],
    runningSandboxes: async () => [],
  };
  /** Plugins that log each call but VERSION (command, interface, type) and answer only VERSION. */
  const recordingPlugins = (): (() => string[]) => {
    const calls = path.join(dir, 'calls');
    const version = `[ "$CNI_COMMAND" = VERSION ] && exec echo '{"cniVersion":"1.0.0","supportedVersions":["0.2.0","0.4.0","1.0.0"]}'`;
    for (const type of ['loopback', 'bridge', 'portmap']) {
      fs.writeFileSync(path.join(dir, 'bin', type), `#!/bin/sh\ncat >/dev/null\n${version}\necho "$CNI_COMMAND $CNI_IFNAME ${type}" >> ${calls}\n`, { mode: 0o755 });
    }
    return () => (fs.existsSync(calls) ? fs.readFileSync(calls, 'utf8').trim().split('\n') : []);
  };
  const attachments = (): PodAttachments => new PodAttachments({ binDirs: [path.join(dir, 'bin')], cacheDir: dir, timeoutMs: 5000 }, host, silentLogger());
  const pod = { podName: 'p', podNamespace: 'ns', podUid: 'u', sandboxId: ID, annotations: {} };

  it('tells loopback entries apart by their plugins, whatever their interface', () => {
    assert.equal(isLoopbackEntry({ networkName: 'cni-loopback', config: Buffer.from(CRI_DOCKERD_LOOPBACK).toString('base64') }), true);
    assert.equal(isLoopbackEntry({ networkName: 'k8s-pod-network', config: base64(POD_NETWORK) }), false);
    assert.equal(isLoopbackEntry({ networkName: 'x', config: base64('not a config') }), false);
    assert.equal(isLoopbackOnly(loopbackNetwork('1.0.0')), true);
  });

  it("takes the pod's IP from the pod network's entry, not the loopback's listed before it", () => {
    criDockerdPod();
    assert.deepEqual(attachments().ipsOf(ID), ['10.22.0.7']);
    assert.equal(attachments().podNetworkEntry(ID)?.networkName, 'k8s-pod-network');
  });

  it("runs DEL of both on teardown, with each one's own config", async () => {
    criDockerdPod();
    const calls = recordingPlugins();
    await attachments().tearDown(pod, undefined);
    assert.deepEqual(calls().sort(), ['DEL eth0 bridge', 'DEL eth0 loopback', 'DEL eth0 portmap']);
    assert.deepEqual(fs.readdirSync(path.join(dir, 'results')), []);
  });

  it("falls back to a DEL with today's network when the pod network's entry is torn, though loopback's is usable", async () => {
    criDockerdPod();
    write(`k8s-pod-network-${ID}-eth0`, '{"kind":"cniCacheV1","contai');
    const calls = recordingPlugins();
    const current = { name: 'k8s-pod-network', cniVersion: '0.4.0', plugins: POD_NETWORK.plugins, source: '10-pod.conflist', bytes: JSON.stringify(POD_NETWORK) };
    await attachments().tearDown(pod, current);
    assert.deepEqual(calls(), ['DEL eth0 loopback', 'DEL eth0 portmap', 'DEL eth0 bridge']);
    assert.deepEqual(fs.readdirSync(path.join(dir, 'results')), [], 'the torn file goes once its DEL is done');
  });

  it("finds today's network for that fallback when StopPodSandbox is the first call after a restart", async () => {
    criDockerdPod();
    write(`k8s-pod-network-${ID}-eth0`, '{"kind":"cniCacheV1","contai');
    fs.mkdirSync(path.join(dir, 'net.d'));
    fs.writeFileSync(path.join(dir, 'net.d', '10-pod.conflist'), JSON.stringify(POD_NETWORK));
    const calls = recordingPlugins();
    const plugin = new CniNetworkPlugin({ binDirs: [path.join(dir, 'bin')], confDir: path.join(dir, 'net.d'), cacheDir: dir, timeoutMs: 5000 }, host, silentLogger());
    await plugin.tearDownPod(pod);
    assert.deepEqual(calls(), ['DEL eth0 loopback', 'DEL eth0 portmap', 'DEL eth0 bridge']);
  });
});
