// The CNI result cache as a node leaves it: ours, and libcni's (cri-dockerd) in any spec
// version, torn and foreign files among them; and results and configs of every spec version.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { readCacheDocument, ResultCache } from '../../src/network/libcni/cache';
import { parseNetworkConfig } from '../../src/network/libcni/config';
import { parseResult, podIpsOf } from '../../src/network/libcni/result';
import { tempDir } from '../support/temp';

const ID = 'c'.repeat(64);
const base64 = (doc: unknown): string => Buffer.from(JSON.stringify(doc)).toString('base64');
/** cri-dockerd's loopback, as libcni caches it: cniVersion 0.2.0, no cniArgs or capabilityArgs. */
const LIBCNI_LOOPBACK = {
  kind: 'cniCacheV1',
  containerId: ID,
  config: base64({ cniVersion: '0.2.0', name: 'cni-loopback', plugins: [{ type: 'loopback' }] }),
  ifName: 'lo',
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
    fs.writeFileSync(path.join(results, `cni-loopback-${ID}-lo`), JSON.stringify(LIBCNI_LOOPBACK));
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
