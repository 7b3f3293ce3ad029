import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CredentialCache } from '../../../src/credentials/credential-cache';
import type { CredentialProviderPlugin } from '../../../src/credentials/provider-config';
import type { PluginResponse } from '../../../src/credentials/credential-plugin';
import { CredentialProvider, CredentialProviders } from '../../../src/credentials/providers';
import { silentLogger } from '../../../src/util/logger';

const A = { 'reg.io': { username: 'a', password: 'pa' } };
const B = { 'reg.io': { username: 'b', password: 'pb' } };

function clock(): { now: () => number; advance(ms: number): void } {
  let t = 1_000_000;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

function spec(name: string, over: Partial<CredentialProviderPlugin> = {}): CredentialProviderPlugin {
  return { name, binaryPath: `/bin/${name}`, matchImages: ['reg.io', '*.reg.io'], defaultCacheDurationMs: 60_000, apiVersion: 'v1', args: [], env: [], ...over };
}

describe('CredentialCache', () => {
  it('looks up image, then registry, then global', () => {
    const c = clock();
    const cache = new CredentialCache(c.now);
    cache.store('Global', 'reg.io/x:1', 'reg.io', { g: { username: 'g', password: '' } }, 10_000);
    assert.deepEqual(cache.lookup('other.io/y:1', 'other.io'), { g: { username: 'g', password: '' } });
    cache.store('Registry', 'reg.io/x:1', 'reg.io', B, 10_000);
    assert.deepEqual(cache.lookup('reg.io/z:2', 'reg.io'), B);
    cache.store('Image', 'reg.io/x:1', 'reg.io', A, 10_000);
    assert.deepEqual(cache.lookup('reg.io/x:1', 'reg.io'), A);
    assert.deepEqual(cache.lookup('reg.io/z:2', 'reg.io'), B);
  });

  it('expires entries and purges them; a zero duration is not stored', () => {
    const c = clock();
    const cache = new CredentialCache(c.now);
    cache.store('Image', 'reg.io/x:1', 'reg.io', A, 5_000);
    cache.store('Registry', 'reg.io/x:1', 'reg.io', B, 0);
    assert.equal(cache.size, 1);
    c.advance(4_999);
    assert.deepEqual(cache.lookup('reg.io/x:1', 'reg.io'), A);
    c.advance(1);
    assert.equal(cache.lookup('reg.io/x:1', 'reg.io'), undefined);
    assert.equal(cache.size, 0);
  });
});

describe('CredentialProvider', () => {
  function counting(response: Omit<PluginResponse, 'auth'> & { auth?: PluginResponse['auth'] }, delayMs = 0) {
    const calls: string[] = [];
    const run = async (_p: CredentialProviderPlugin, image: string): Promise<PluginResponse> => {
      calls.push(image);
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      return { auth: A, ...response };
    };
    return { calls, run };
  }

  it('caches by the answer’s key type for its duration, else the default', async () => {
    const c = clock();
    const { calls, run } = counting({ cacheKeyType: 'Registry', cacheDurationMs: undefined });
    const p = new CredentialProvider(spec('p'), run, c.now);
    await p.provide('reg.io/x:1');
    await p.provide('reg.io/other:2'); // same registry: cached
    assert.deepEqual(calls, ['reg.io/x:1']);
    c.advance(60_000); // the default duration from the config
    await p.provide('reg.io/other:2');
    assert.deepEqual(calls, ['reg.io/x:1', 'reg.io/other:2']);
  });

  it('Image-keyed answers are per image; a zero duration calls the plugin every time', async () => {
    const image = counting({ cacheKeyType: 'Image', cacheDurationMs: 30_000 });
    const p = new CredentialProvider(spec('p'), image.run);
    await p.provide('reg.io/x:1');
    await p.provide('reg.io/x:1');
    await p.provide('reg.io/y:1');
    assert.deepEqual(image.calls, ['reg.io/x:1', 'reg.io/y:1']);
    const never = counting({ cacheKeyType: 'Global', cacheDurationMs: 0 });
    const q = new CredentialProvider(spec('q'), never.run);
    await q.provide('reg.io/x:1');
    await q.provide('reg.io/x:1');
    assert.equal(never.calls.length, 2);
  });

  it('concurrent requests for one image run the plugin once', async () => {
    const { calls, run } = counting({ cacheKeyType: 'Image', cacheDurationMs: 0 }, 50);
    const p = new CredentialProvider(spec('p'), run);
    const answers = await Promise.all([p.provide('reg.io/x:1'), p.provide('reg.io/x:1'), p.provide('reg.io/x:1')]);
    assert.equal(calls.length, 1);
    for (const a of answers) assert.deepEqual(a, A);
  });
});

describe('CredentialProviders', () => {
  it('asks only matching providers, merges (earlier wins), keeps keys matching the image, most specific first', async () => {
    const asked: string[] = [];
    const run = async (p: CredentialProviderPlugin): Promise<PluginResponse> => {
      asked.push(p.name);
      if (p.name === 'first') return { cacheKeyType: 'Image', cacheDurationMs: 0, auth: { 'reg.io': A['reg.io'], 'reg.io/team': { username: 't', password: 'pt' } } };
      return { cacheKeyType: 'Image', cacheDurationMs: 0, auth: { 'reg.io': B['reg.io'], 'elsewhere.io': { username: 'e', password: '' } } };
    };
    const providers = new CredentialProviders(
      [spec('first'), spec('second'), spec('unrelated', { matchImages: ['nothere.io'] })],
      silentLogger(),
      run,
    );
    const creds = await providers.credentialsFor('reg.io/team/app:1');
    assert.deepEqual(asked.sort(), ['first', 'second']);
    assert.deepEqual(creds, [{ username: 't', password: 'pt' }, { username: 'a', password: 'pa' }]);
  });

  it('a failing plugin yields no credentials instead of failing the pull', async () => {
    const providers = new CredentialProviders([spec('broken')], silentLogger(), async () => {
      throw new Error('boom');
    });
    assert.deepEqual(await providers.credentialsFor('reg.io/app:1'), []);
  });
});
