import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChainedCredentials, dockerConfigCredentials, DockerConfigError, parseDockerConfig, registryKeyPattern } from '../../../src/credentials/docker-config';

describe('Docker config.json credentials', () => {
  it('registry keys become patterns without scheme or API suffix', () => {
    assert.equal(registryKeyPattern('https://index.docker.io/v1/'), 'docker.io');
    assert.equal(registryKeyPattern('http://127.0.0.1:5000/v2/'), '127.0.0.1:5000');
    assert.equal(registryKeyPattern('registry.example.com/team/'), 'registry.example.com/team');
  });

  it('picks the entries covering the image, most specific first', () => {
    const text = JSON.stringify({
      auths: {
        'registry.example.com': { auth: Buffer.from('a:1').toString('base64') },
        'registry.example.com/team': { username: 't', password: '2' },
        'other.example.com': { username: 'o', password: '3' },
      },
    });
    assert.deepEqual(dockerConfigCredentials(text, 'registry.example.com/team/app:1'), [
      { username: 't', password: '2', auth: undefined, identityToken: undefined, registryToken: undefined },
      { username: undefined, password: undefined, auth: Buffer.from('a:1').toString('base64'), identityToken: undefined, registryToken: undefined },
    ]);
    assert.deepEqual(dockerConfigCredentials(text, 'nowhere.io/app:1'), []);
  });

  it('a file without auths has none; a broken one is an error that does not quote it', () => {
    assert.deepEqual(parseDockerConfig('{"credsStore":"x"}'), []);
    assert.throws(() => parseDockerConfig('{"auths": "secret-value"}'), (err: unknown) => err instanceof DockerConfigError && !err.message.includes('secret-value'));
    assert.throws(() => parseDockerConfig('secret-value'), (err: unknown) => err instanceof DockerConfigError && !err.message.includes('secret-value'));
  });

  it('chained sources keep every credential in source order', async () => {
    const chain = new ChainedCredentials([
      { credentialsFor: async () => [{ username: 'first' }] },
      { credentialsFor: async () => [{ username: 'second' }] },
    ]);
    assert.deepEqual(await chain.credentialsFor('x'), [{ username: 'first' }, { username: 'second' }]);
  });
});
