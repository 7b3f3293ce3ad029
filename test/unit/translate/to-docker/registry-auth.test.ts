import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthConfig__Output } from '../../../../src/cri/types';
import { InvalidArgumentError } from '../../../../src/errors';
import {
  credentialFromRequest,
  decodeBasicAuth,
  MAX_CREDENTIAL_FIELD_LENGTH,
  toDockerRegistryAuth,
} from '../../../../src/translate/to-docker/registry-auth';

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

  it('refuses a field too long for Docker’s header (431 over 1 MiB), naming it but not its value', () => {
    for (const name of ['username', 'password', 'auth', 'server_address', 'identity_token', 'registry_token']) {
      const key = name.replace(/_(.)/g, (_, c: string) => c.toUpperCase()) as keyof AuthConfig__Output;
      const long = 's'.repeat(MAX_CREDENTIAL_FIELD_LENGTH + 1);
      const c = credentialFromRequest(authConfig({ username: 'u', password: 'p', [key]: long }))!;
      assert.throws(() => toDockerRegistryAuth(c, 'r'), (err: unknown) => {
        assert.ok(err instanceof InvalidArgumentError);
        assert.equal(err.message, `auth.${name}: ${long.length} characters; at most ${MAX_CREDENTIAL_FIELD_LENGTH} are allowed`);
        return true;
      });
    }
    // The fuzzer's case: a 790 KB registry address.
    const c = credentialFromRequest(authConfig({ username: 'u', password: 'p', serverAddress: 'r'.repeat(790_000) }))!;
    assert.throws(() => toDockerRegistryAuth(c, 'r'), /^InvalidArgumentError: auth\.server_address: 790000 characters/);
  });

  it('every field at its bound, each character at its longest in JSON, still fits Docker’s 1 MiB header', () => {
    const worst = '\u0001'.repeat(MAX_CREDENTIAL_FIELD_LENGTH);
    const c = credentialFromRequest(
      authConfig({ username: worst, password: worst, serverAddress: worst, identityToken: worst, registryToken: worst }),
    )!;
    const header = Buffer.from(JSON.stringify({ ...toDockerRegistryAuth(c, 'r'), auth: worst })).toString('base64');
    assert.ok(header.length < 1024 * 1024, `${header.length} bytes`);
  });
});
