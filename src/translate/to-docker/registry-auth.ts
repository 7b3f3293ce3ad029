// CRI AuthConfig -> the registry auth Docker takes in X-Registry-Auth (pure). Docker's daemon
// does not decode the combined "auth" field itself, so it is split into username and password
// here. Errors never include the secret they are about.
import type { AuthConfig__Output } from '../../cri/types';
import type { RegistryAuth } from '../../docker/types';
import { InvalidArgumentError } from '../../errors';
import type { RegistryCredential } from '../../conventions/registry-credential';

export type { RegistryCredential };

export function hasCredentials(c: RegistryCredential | null | undefined): c is RegistryCredential {
  return !!c && !!(c.username || c.password || c.auth || c.identityToken || c.registryToken);
}

/** The request's auth, or undefined when it carries none. */
export function credentialFromRequest(auth: AuthConfig__Output | null | undefined): RegistryCredential | undefined {
  if (!auth) return undefined;
  const c: RegistryCredential = {
    username: auth.username,
    password: auth.password,
    auth: auth.auth,
    identityToken: auth.identityToken,
    registryToken: auth.registryToken,
    serverAddress: auth.serverAddress,
  };
  return hasCredentials(c) ? c : undefined;
}

/** Splits base64 "username:password"; `field` names where it came from in the error. */
export function decodeBasicAuth(encoded: string, field: string): { username: string; password: string } {
  const text = encoded.trim();
  if (!/^[A-Za-z0-9+/=_-]+$/.test(text)) throw new InvalidArgumentError(`${field} is not base64`);
  const decoded = Buffer.from(text, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) throw new InvalidArgumentError(`${field} does not decode to "username:password"`);
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** What Docker gets for `credential` when pulling from `registryHost`. */
export function toDockerRegistryAuth(credential: RegistryCredential, registryHost: string, field = 'auth.auth'): RegistryAuth {
  let username = credential.username ?? '';
  let password = credential.password ?? '';
  if (credential.auth && username === '' && password === '') {
    ({ username, password } = decodeBasicAuth(credential.auth, field));
  }
  const auth: RegistryAuth = { serveraddress: credential.serverAddress || registryHost };
  if (username !== '') auth.username = username;
  if (password !== '') auth.password = password;
  if (credential.identityToken) auth.identitytoken = credential.identityToken;
  if (credential.registryToken) auth.registrytoken = credential.registryToken;
  return auth;
}
