// Seccomp, AppArmor and SELinux settings (from a pod's or a container's security context) as
// Docker's security options, and the user and group IDs. Pods and containers share these rules. Pure: reading a localhost
// seccomp profile goes through `HostFiles`, so unit tests need no machine.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SecurityProfile__Output, SELinuxOption__Output } from '../../cri/types';
import { MAX_UID_GID, numericId } from '../../conventions/user-ids';
import { InvalidArgumentError } from '../../errors';
import { quote } from '../../util/quote';

/** A uid or gid from a request (an int64 as a decimal string); INVALID_ARGUMENT naming `field` outside 0..MAX_UID_GID. */
export function uidGid(field: string, text: string): number {
  const id = numericId(text);
  if (id === undefined) throw new InvalidArgumentError(`${field}: ${quote(text)} is not a uid/gid (0..${MAX_UID_GID})`);
  return id;
}

/** What the translation may read from the host. */
export interface HostFiles {
  /** The text of a file; throws when it does not exist or cannot be read. */
  readText(path: string): string;
}

/** Seccomp profiles are small JSON documents; anything bigger is not one. */
const MAX_PROFILE_BYTES = 1024 * 1024;

export const nodeHostFiles: HostFiles = {
  readText(p) {
    const { size } = fs.statSync(p);
    if (size > MAX_PROFILE_BYTES) throw Object.assign(new Error('too large'), { code: 'EFBIG' });
    return fs.readFileSync(p, 'utf8');
  },
};

function localProfilePath(where: string, p: string): string {
  if (!path.isAbsolute(p) || path.normalize(p) !== p) {
    throw new InvalidArgumentError(`${where}: ${quote(p)} must be an absolute, normalised path`);
  }
  return p;
}

/**
 * Seccomp as Docker's security option; `field` is the security context's own path. An absent
 * profile means unconfined, as it did for dockershim (Kubernetes' own default); RuntimeDefault
 * keeps Docker's default profile; a Localhost profile is a JSON file on this host, which Docker
 * takes inline. The deprecated seccomp_profile_path string is read when no profile is given.
 */
export function seccompOption(field: string, profile: SecurityProfile__Output | null, legacyPath: string, host: HostFiles): string | undefined {
  let file: string;
  let where: string;
  if (profile) {
    if (profile.profileType === 'RuntimeDefault') return undefined;
    if (profile.profileType === 'Unconfined') return 'seccomp=unconfined';
    where = `${field}.seccomp.localhost_ref`;
    if (profile.localhostRef === '') throw new InvalidArgumentError(`${where} is required for a Localhost profile`);
    file = profile.localhostRef;
  } else {
    where = `${field}.seccomp_profile_path`;
    if (legacyPath === '' || legacyPath === 'unconfined') return 'seccomp=unconfined';
    if (legacyPath === 'runtime/default' || legacyPath === 'docker/default') return undefined;
    if (!legacyPath.startsWith('localhost/')) {
      throw new InvalidArgumentError(`${where}: ${quote(legacyPath)} is not unconfined, runtime/default or localhost/<path>`);
    }
    file = legacyPath.slice('localhost/'.length);
  }
  localProfilePath(where, file);
  let text: string;
  try {
    text = host.readText(file);
  } catch (err) {
    throw new InvalidArgumentError(`${where}: cannot read seccomp profile ${quote(file)}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  try {
    JSON.parse(text);
  } catch {
    throw new InvalidArgumentError(`${where}: seccomp profile ${quote(file)} is not JSON`);
  }
  return `seccomp=${text}`;
}

/** AppArmor as Docker's security option; RuntimeDefault (and nothing) keeps Docker's profile. */
export function apparmorOption(field: string, profile: SecurityProfile__Output | null, legacy: string): string | undefined {
  let name: string;
  if (profile) {
    if (profile.profileType === 'RuntimeDefault') return undefined;
    if (profile.profileType === 'Unconfined') return 'apparmor=unconfined';
    name = profile.localhostRef.replace(/^localhost\//, '');
    if (name === '') throw new InvalidArgumentError(`${field}.apparmor.localhost_ref is required for a Localhost profile`);
  } else if (legacy === '' || legacy === 'runtime/default') {
    return undefined;
  } else if (legacy === 'unconfined') {
    return 'apparmor=unconfined';
  } else if (legacy.startsWith('localhost/')) {
    name = legacy.slice('localhost/'.length);
  } else {
    throw new InvalidArgumentError(`${field}.apparmor_profile: unknown profile ${quote(legacy)}`);
  }
  if (name === '' || /[\s=,]/.test(name)) throw new InvalidArgumentError(`${field}.apparmor: ${quote(name)} is not a profile name`);
  return `apparmor=${name}`;
}

/** SELinux options as Docker's label options; each part must be one word. */
export function selinuxOptions(field: string, se: SELinuxOption__Output | null): string[] {
  if (!se) return [];
  const out: string[] = [];
  for (const key of ['user', 'role', 'type', 'level'] as const) {
    const value = se[key];
    if (value === '') continue;
    if (/[\s,]/.test(value)) throw new InvalidArgumentError(`${field}.selinux_options.${key}: ${quote(value)} contains spaces or commas`);
    out.push(`label=${key}:${value}`);
  }
  return out;
}
