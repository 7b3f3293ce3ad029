// Pulls that carry no auth, served by kubelet-style credential provider plugins (the fixture
// script under test/fixtures/credential-provider, installed under several names), and the
// start-up checks of --image-credential-provider-config.
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { rejectsWith } from '../support/client';
import { useShim } from '../support/fixture';
import { dockerApi, TEST_BUSYBOX_IMAGE } from '../support/images';
import type { TestRegistry } from '../support/registry';
import { runShimToExit, type ShimProcess } from '../support/shim';

const FIXTURE = path.resolve(__dirname, '../../../test/fixtures/credential-provider/test-credential-provider');

interface ProviderSetup {
  name: string;
  mode: string;
  pathPrefix: string;
  defaultCacheDuration: string;
  env?: Record<string, string>;
}

describe('PullImage with credential provider plugins', () => {
  const f = useShim({ shim: false });
  let registry: TestRegistry;
  let shim: ShimProcess;
  let dir: string;
  const pushed: string[] = [];
  const docker = dockerApi();
  const log = (name: string): string => path.join(dir, `${name}.log`);
  const calls = (name: string): string[] => (fs.existsSync(log(name)) ? fs.readFileSync(log(name), 'utf8').trim().split('\n') : []);

  function writeConfig(providers: ProviderSetup[]): string {
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin, { recursive: true });
    const lines = ['apiVersion: kubelet.config.k8s.io/v1', 'kind: CredentialProviderConfig', 'providers:'];
    for (const p of providers) {
      fs.symlinkSync(FIXTURE, path.join(bin, p.name));
      const env = {
        CDS_PLUGIN_USERNAME: registry.username,
        CDS_PLUGIN_PASSWORD: registry.password,
        CDS_PLUGIN_MATCH: registry.host,
        CDS_PLUGIN_LOG: log(p.name),
        ...p.env,
      };
      lines.push(
        `  - name: ${p.name}`,
        '    apiVersion: credentialprovider.kubelet.k8s.io/v1',
        `    matchImages: ["${registry.host}/${p.pathPrefix}"]`,
        `    defaultCacheDuration: "${p.defaultCacheDuration}"`,
        `    args: [${p.mode}]`,
        '    env:',
        ...Object.entries(env).map(([k, v]) => `      - {name: ${k}, value: "${v}"}`),
      );
    }
    const file = path.join(dir, 'credential-providers.yaml');
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    return file;
  }

  before(async () => {
    dir = f.tempDir('credprov');
    registry = await f.startRegistry();
    for (const name of ['cached/a:1', 'cached/b:1', 'nocache/a:1', 'garbage/a:1', 'unmatched/a:1']) {
      pushed.push((await registry.push(TEST_BUSYBOX_IMAGE, name)).ref);
    }
    f.removeImagesAfter(pushed);
    const config = writeConfig([
      // Slow, so concurrent pulls overlap while it runs; cached per registry for an hour.
      { name: 'cached-provider', mode: 'slow', pathPrefix: 'cached', defaultCacheDuration: '0s', env: { CDS_PLUGIN_CACHE_KEY_TYPE: 'Registry', CDS_PLUGIN_CACHE_DURATION: '1h' } },
      { name: 'nocache-provider', mode: 'ok', pathPrefix: 'nocache', defaultCacheDuration: '0s' },
      { name: 'garbage-provider', mode: 'garbage', pathPrefix: 'garbage', defaultCacheDuration: '1h' },
    ]);
    ({ shim } = await f.startShim({ args: [`--image-credential-provider-config=${config}`, `--image-credential-provider-bin-dir=${path.join(dir, 'bin')}`] }));
  });

  it('concurrent pulls of one image run the plugin once, with the image in the request', async () => {
    const image = pushed[0]!;
    const results = await Promise.all([1, 2, 3].map(() => shim.client.images.PullImage({ image: { image } })));
    const id = (await docker.getImage(image).inspect()).Id;
    for (const r of results) assert.equal(r.imageRef, id);
    const requests = calls('cached-provider').map((l) => JSON.parse(l) as { kind: string; image: string });
    assert.equal(requests.length, 1);
    assert.deepEqual(requests[0], { apiVersion: 'credentialprovider.kubelet.k8s.io/v1', kind: 'CredentialProviderRequest', image });
  });

  it('a Registry-keyed answer serves other images of that registry from the cache', async () => {
    await shim.client.images.PullImage({ image: { image: pushed[1]! } });
    assert.equal(calls('cached-provider').length, 1);
  });

  it('a zero cache duration runs the plugin on every pull', async () => {
    await shim.client.images.PullImage({ image: { image: pushed[2]! } });
    await shim.client.images.PullImage({ image: { image: pushed[2]! } });
    assert.equal(calls('nocache-provider').length, 2);
  });

  it('a plugin printing garbage gives no credentials: the pull is refused, the output never logged', async () => {
    await assert.rejects(shim.client.images.PullImage({ image: { image: pushed[3]! } }), rejectsWith(status.UNAUTHENTICATED));
    assert.equal(calls('garbage-provider').length, 1);
    assert.match(shim.output(), /credential provider failed/);
    assert.match(shim.output(), /garbage-provider.*its output is not a JSON CredentialProviderResponse/);
  });

  it('an image no provider matches is pulled without credentials (and refused)', async () => {
    await assert.rejects(shim.client.images.PullImage({ image: { image: pushed[4]! } }), rejectsWith(status.UNAUTHENTICATED, /unmatched\/a:1/));
  });

  it('credentials never reach the log', () => {
    assert.ok(!shim.output().includes(registry.password));
  });
});

describe('--image-credential-provider-config at start-up', () => {
  const f = useShim({ shim: false });
  let dir: string;
  before(() => (dir = f.tempDir('credcfg')));

  /** Runs the shim with this provider config (plugins looked for in `dir`) until it exits. */
  const startWith = (config: string, socketName: string) =>
    runShimToExit([
      `--container-runtime-endpoint=unix://${path.join(dir, socketName)}`,
      `--cri-dockerd-root-directory=${path.join(dir, 'root')}`,
      `--image-credential-provider-config=${config}`,
      `--image-credential-provider-bin-dir=${dir}`,
    ]);

  it('a provider whose binary is missing stops start-up, naming it', async () => {
    const file = path.join(dir, 'cfg.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'kubelet.config.k8s.io/v1',
        kind: 'CredentialProviderConfig',
        providers: [{ name: 'absent-plugin', matchImages: ['x.io'], defaultCacheDuration: '1m', apiVersion: 'credentialprovider.kubelet.k8s.io/v1' }],
      }),
    );
    const res = await startWith(file, 'cri.sock');
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /absent-plugin/);
  });

  it('an invalid config stops start-up, naming the file and the field', async () => {
    const file = path.join(dir, 'bad.yaml');
    fs.writeFileSync(file, 'apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: p\n    matchImages: []\n');
    const res = await startWith(file, 'cri2.sock');
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /bad\.yaml.*matchImages must list/);
  });
});

describe('PullImage with a Docker config.json in the root directory', () => {
  const f = useShim({ shim: false });
  let registry: TestRegistry;
  let shim: ShimProcess;
  let dir: string;
  let ref: string;
  const docker = dockerApi();

  before(async () => {
    dir = f.tempDir('dockercfg');
    registry = await f.startRegistry();
    ref = (await registry.push(TEST_BUSYBOX_IMAGE, 'fromconfig:1')).ref;
    f.removeImagesAfter([ref]);
    const auth = Buffer.from(`${registry.username}:${registry.password}`).toString('base64');
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ auths: { [`http://${registry.host}/v2/`]: { auth } } }), { mode: 0o600 });
    ({ shim } = await f.startShim({ rootDir: dir }));
  });

  it('uses its credentials when the request has none', async () => {
    const res = await shim.client.images.PullImage({ image: { image: ref } });
    assert.equal(res.imageRef, (await docker.getImage(ref).inspect()).Id);
    assert.ok(!shim.output().includes(registry.password));
  });
});
