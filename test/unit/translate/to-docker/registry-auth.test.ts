import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthConfig__Output } from '../../../../src/cri/types';
import { InvalidArgumentError } from '../../../../src/errors';
import { credentialFromRequest, decodeBasicAuth, toDockerRegistryAuth } from '../../../../src/translate/to-docker/registry-auth';

function authConfig(over: Partial<AuthConfig__Output>): AuthConfig__Output {
  return { username: '', password: '', auth: '', serverAddress: '', identityToken: '', registryToken: '', ...over };
}

describe('registry auth', () => {
  it('an empty AuthConfig is no credentials', () => {
    assert.equal(credentialFromRequest(authConfig({})), undefined);
    assert.equal(credentialFromRequest(null), undefined);
  });

  it('username and password go to Docker as they are, with the registry as server address', () => {
    const c = credentialFromRequest(authConfig({ username: 'u', password: 'p' }))!;
    assert.deepEqual(toDockerRegistryAuth(c, '127.0.0.1:5000'), { username: 'u', password: 'p', serveraddress: '127.0.0.1:5000' });
  });

  it('the combined auth field is split into username and password', () => {
    const c = credentialFromRequest(authConfig({ auth: Buffer.from('user:pa:ss').toString('base64'), serverAddress: 'reg.example' }))!;
    assert.deepEqual(toDockerRegistryAuth(c, 'ignored'), { username: 'user', password: 'pa:ss', serveraddress: 'reg.example' });
  });

  it('identity and registry tokens are passed on', () => {
    const c = credentialFromRequest(authConfig({ identityToken: 'id-tok', registryToken: 'reg-tok' }))!;
    const a = toDockerRegistryAuth(c, 'r');
    assert.equal(a.identitytoken, 'id-tok');
    assert.equal(a.registrytoken, 'reg-tok');
  });

  it('a malformed auth field is INVALID_ARGUMENT without the secret in the message', () => {
    const secret = 'not-base64!!secret';
    assert.throws(() => decodeBasicAuth(secret, 'auth.auth'), (err: unknown) => {
      assert.ok(err instanceof InvalidArgumentError);
      assert.match(err.message, /auth\.auth/);
      assert.doesNotMatch(err.message, /secret/);
      return true;
    });
    const noColon = Buffer.from('justsecret').toString('base64');
    assert.throws(() => decodeBasicAuth(noColon, 'auth.auth'), (err: unknown) => {
      assert.ok(err instanceof InvalidArgumentError);
      assert.doesNotMatch(err.message, /justsecret|anVzdHNlY3JldA/);
      return true;
    });
  });
});
