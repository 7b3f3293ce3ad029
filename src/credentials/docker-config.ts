// Registry credentials from a Docker config.json ({"auths": {"<registry>": {...}}}), the last
// place a pull without request auth looks, as kubelet's keyring reads /var/lib/kubelet/config.json.
// The shim reads <--cri-dockerd-root-directory>/config.json, again on every pull that needs it
// (an operator may rotate it without a restart). Errors never quote the file's content.
import * as fs from 'node:fs';
import type { RegistryCredential } from '../conventions/registry-credential';
import type { Logger } from '../util/logger';
import { errorMessage } from '../errors';
import { matchesImage } from './match';
import type { CredentialSource } from './providers';

export class DockerConfigError extends Error {}

interface DockerConfigEntry {
  auth?: unknown;
  username?: unknown;
  password?: unknown;
  identitytoken?: unknown;
  registrytoken?: unknown;
}

/** A config.json registry key as a matchImages-style pattern: no scheme, no /v1/ suffix. */
export function registryKeyPattern(key: string): string {
  let k = key.trim().replace(/^[a-z]+:\/\//i, '');
  k = k.replace(/\/v[12]\/?$/, '').replace(/\/+$/, '');
  if (k === 'index.docker.io' || k === 'registry-1.docker.io') return 'docker.io';
  return k;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** Parses config.json text into pattern -> credential, in the order keys appear (pure). */
export function parseDockerConfig(text: string): Array<{ pattern: string; credential: RegistryCredential }> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new DockerConfigError('is not JSON');
  }
  if (typeof doc !== 'object' || doc === null) throw new DockerConfigError('is not a JSON object');
  const auths = (doc as { auths?: unknown }).auths;
  if (auths === undefined) return [];
  if (typeof auths !== 'object' || auths === null || Array.isArray(auths)) throw new DockerConfigError('"auths" is not an object');
  return Object.entries(auths as Record<string, DockerConfigEntry>).map(([key, e]) => ({
    pattern: registryKeyPattern(key),
    credential: {
      username: str(e?.username),
      password: str(e?.password),
      auth: str(e?.auth),
      identityToken: str(e?.identitytoken),
      registryToken: str(e?.registrytoken),
    },
  }));
}

/** Credentials of `file` whose registry key covers `image`, most specific key first. */
export function dockerConfigCredentials(text: string, image: string): RegistryCredential[] {
  return parseDockerConfig(text)
    .filter((e) => matchesImage(e.pattern, image))
    .sort((a, b) => (a.pattern < b.pattern ? 1 : a.pattern > b.pattern ? -1 : 0))
    .map((e) => e.credential);
}

export class DockerConfigCredentials implements CredentialSource {
  constructor(
    private readonly file: string,
    private readonly log: Logger,
  ) {}

  async credentialsFor(image: string): Promise<RegistryCredential[]> {
    let text: string;
    try {
      text = await fs.promises.readFile(this.file, 'utf8');
    } catch {
      return []; // no config.json: nothing configured
    }
    try {
      return dockerConfigCredentials(text, image);
    } catch (err) {
      this.log.warn({ file: this.file, error: errorMessage(err) }, 'ignoring unreadable Docker config');
      return [];
    }
  }
}

/** Asks each source in turn and keeps every credential, in order. */
export class ChainedCredentials implements CredentialSource {
  constructor(private readonly sources: readonly CredentialSource[]) {}

  async credentialsFor(image: string): Promise<RegistryCredential[]> {
    const all = await Promise.all(this.sources.map((s) => s.credentialsFor(image)));
    return all.flat();
  }
}
