// CRI AuthConfig -> the registry auth Docker takes in X-Registry-Auth (pure). Docker's daemon
// does not decode the combined "auth" field itself, so it is split into username and password
// here. Errors never include the secret they are about. Docker takes the credential as one
// header, base64 of its JSON, and refuses headers over 1 MiB (Go's default) with 431; each field
// is bounded so that the header always fits (16 KiB each, at most 6 bytes of JSON per character,
// six fields, 4/3 for base64: 768 KiB), which no real token comes near.
import type { AuthConfig__Output } from '../../cri/types';
import type { RegistryAuth } from '../../docker/types';
import { InvalidArgumentError } from '../../errors';
import type { RegistryCredential } from '../../conventions/registry-credential';


function hasCredentials(c: RegistryCredential | null | undefined): c is RegistryCredential {
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

/** The most characters one credential field may hold (see the top of this file). */
export const MAX_CREDENTIAL_FIELD_LENGTH = 16 * 1024;

const CREDENTIAL_FIELDS: ReadonlyArray<[keyof RegistryCredential, string]> = [
  ['username', 'username'],
  ['password', 'password'],
  ['auth', 'auth'],
  ['serverAddress', 'server_address'],
  ['identityToken', 'identity_token'],
  ['registryToken', 'registry_token'],
];

/** Refuses a credential with a field too long for Docker's header, naming the field (never its value). */
function checkCredentialSize(credential: RegistryCredential, source: string): void {
  for (const [key, name] of CREDENTIAL_FIELDS) {
    const length = credential[key]?.length ?? 0;
    if (length > MAX_CREDENTIAL_FIELD_LENGTH) {
      throw new InvalidArgumentError(`${source}.${name}: ${length} characters; at most ${MAX_CREDENTIAL_FIELD_LENGTH} are allowed`);
    }
  }
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

/**
 * What Docker gets for `credential` when pulling from `registryHost`; `source` names where it
 * came from in errors (the request's "auth", or a credential provider).
 */
export function toDockerRegistryAuth(credential: RegistryCredential, registryHost: string, source = 'auth'): RegistryAuth {
  checkCredentialSize(credential, source);
  let username = credential.username ?? '';
  let password = credential.password ?? '';
  if (credential.auth && username === '' && password === '') {
    ({ username, password } = decodeBasicAuth(credential.auth, `${source}.auth`));
  }
  const auth: RegistryAuth = { serveraddress: credential.serverAddress || registryHost };
  if (username !== '') auth.username = username;
  if (password !== '') auth.password = password;
  if (credential.identityToken) auth.identitytoken = credential.identityToken;
  if (credential.registryToken) auth.registrytoken = credential.registryToken;
  return auth;
}
