// Runs the fixture plugin (test/fixtures/credential-provider) as a real child process.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import type { CredentialProviderPlugin } from '../../../src/credentials/provider-config';
import { execPlugin, parsePluginResponse, PluginError } from '../../../src/credentials/credential-plugin';

const FIXTURE = path.resolve(__dirname, '../../../../test/fixtures/credential-provider/test-credential-provider');
const V1 = 'credentialprovider.kubelet.k8s.io/v1';
const SECRET = 's3cret-pw';

function plugin(mode: string, env: Record<string, string> = {}): CredentialProviderPlugin {
  return {
    name: 'test-credential-provider',
    binaryPath: FIXTURE,
    matchImages: ['127.0.0.1:5000'],
    defaultCacheDurationMs: 0,
    apiVersion: V1,
    args: [mode],
    env: Object.entries({ CDS_PLUGIN_USERNAME: 'u', CDS_PLUGIN_PASSWORD: SECRET, CDS_PLUGIN_MATCH: '127.0.0.1:5000', ...env }).map(([name, value]) => ({ name, value })),
  };
}

function noSecret(err: unknown): boolean {
  assert.ok(err instanceof PluginError, String(err));
  assert.doesNotMatch(err.message, new RegExp(SECRET));
  return true;
}

describe('parsePluginResponse', () => {
  const ok = { apiVersion: V1, kind: 'CredentialProviderResponse', cacheKeyType: 'Registry', cacheDuration: '5m', auth: { 'x.io': { username: 'a', password: 'b' } } };
  it('reads a v1 response', () => {
    assert.deepEqual(parsePluginResponse(JSON.stringify(ok), V1), { cacheKeyType: 'Registry', cacheDurationMs: 300_000, auth: { 'x.io': { username: 'a', password: 'b' } } });
    assert.equal(parsePluginResponse(JSON.stringify({ ...ok, cacheDuration: undefined }), V1).cacheDurationMs, undefined);
  });
  it('rejects a wrong apiVersion, kind or cacheKeyType', () => {
    assert.throws(() => parsePluginResponse(JSON.stringify({ ...ok, apiVersion: 'credentialprovider.kubelet.k8s.io/v1beta1' }), V1), /apiVersion/);
    assert.throws(() => parsePluginResponse(JSON.stringify({ ...ok, kind: 'Other' }), V1), /kind "Other"/);
    assert.throws(() => parsePluginResponse(JSON.stringify({ ...ok, cacheKeyType: 'Pod' }), V1), /cacheKeyType "Pod"/);
    assert.throws(() => parsePluginResponse(`garbage ${SECRET}`, V1), noSecret);
  });
});

describe('execPlugin', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-plugin-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('sends the request on stdin with the config env and reads the response', async () => {
    const log = path.join(dir, 'requests.log');
    const res = await execPlugin(plugin('ok', { CDS_PLUGIN_LOG: log, CDS_PLUGIN_CACHE_KEY_TYPE: 'Global', CDS_PLUGIN_CACHE_DURATION: '1m' }), '127.0.0.1:5000/app:1');
    assert.deepEqual(res, { cacheKeyType: 'Global', cacheDurationMs: 60_000, auth: { '127.0.0.1:5000': { username: 'u', password: SECRET } } });
    const request = JSON.parse(fs.readFileSync(log, 'utf8').trim()) as Record<string, string>;
    assert.deepEqual(request, { apiVersion: V1, kind: 'CredentialProviderRequest', image: '127.0.0.1:5000/app:1' });
  });

  it('passes the shim environment through to the plugin', async () => {
    process.env.CDS_PLUGIN_USERNAME = 'from-shim-env';
    try {
      const p = plugin('ok');
      const res = await execPlugin({ ...p, env: p.env.filter((e) => e.name !== 'CDS_PLUGIN_USERNAME') }, 'x');
      assert.equal(res.auth['127.0.0.1:5000']!.username, 'from-shim-env');
    } finally {
      delete process.env.CDS_PLUGIN_USERNAME;
    }
  });

  it('garbage output, a wrong kind and a failing exit are errors that never quote the output', async () => {
    await assert.rejects(execPlugin(plugin('garbage'), 'x'), (err) => noSecret(err) && /not a JSON/.test((err as Error).message));
    await assert.rejects(execPlugin(plugin('wrongkind'), 'x'), (err) => noSecret(err) && /kind "SomethingElse"/.test((err as Error).message));
    await assert.rejects(execPlugin(plugin('fail'), 'x'), (err) => noSecret(err) && /exited with code 3/.test((err as Error).message));
    await assert.rejects(execPlugin(plugin('ok', { CDS_PLUGIN_API_VERSION: 'credentialprovider.kubelet.k8s.io/v1alpha1' }), 'x'), /apiVersion/);
  });

  it('a hung plugin is killed at the timeout', async () => {
    await assert.rejects(execPlugin(plugin('hang'), 'x', 500), /timed out after 0\.5s and was killed/);
  });
});
