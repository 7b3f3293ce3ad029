// The container's Linux security context, translated to the HostConfig and Config fields that
// Docker has for it. Pure: the only host access (reading a seccomp profile file) comes in
// through `HostFiles`, so unit tests need no machine.
import type {
  Capability__Output,
  LinuxContainerSecurityContext__Output,
  SecurityProfile__Output,
  SELinuxOption__Output,
} from '../../cri/types';
import { InvalidArgumentError, UnimplementedError } from '../../errors';

/** What the translation may read from the host. */
export interface HostFiles {
  /** The text of a file; throws when it does not exist or cannot be read. */
  readText(path: string): string;
}

export interface SecurityTranslation {
  privileged: boolean;
  capAdd: string[];
  capDrop: string[];
  /** Docker's --user: "uid", "uid:gid", "name" or "name:gid"; "" keeps the image's user. */
  user: string;
  groupAdd: string[];
  readonlyRootfs: boolean;
  securityOpt: string[];
  maskedPaths: string[] | undefined;
  readonlyPaths: string[] | undefined;
}

// Every capability the Linux kernel defines (capability(7)), without the CAP_ prefix.
const KNOWN_CAPABILITIES: ReadonlySet<string> = new Set([
  'CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'SETPCAP',
  'LINUX_IMMUTABLE', 'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_ADMIN', 'NET_RAW', 'IPC_LOCK', 'IPC_OWNER',
  'SYS_MODULE', 'SYS_RAWIO', 'SYS_CHROOT', 'SYS_PTRACE', 'SYS_PACCT', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_NICE',
  'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'MKNOD', 'LEASE', 'AUDIT_WRITE', 'AUDIT_CONTROL', 'SETFCAP',
  'MAC_OVERRIDE', 'MAC_ADMIN', 'SYSLOG', 'WAKE_ALARM', 'BLOCK_SUSPEND', 'AUDIT_READ', 'PERFMON', 'BPF',
  'CHECKPOINT_RESTORE',
]);

/** "net_admin", "CAP_NET_ADMIN" and "ALL" in the form Docker takes ("CAP_NET_ADMIN", "ALL"). */
export function normalizeCapability(field: string, name: string): string {
  const upper = name.trim().toUpperCase();
  if (upper === 'ALL') return 'ALL';
  const bare = upper.startsWith('CAP_') ? upper.slice(4) : upper;
  if (!KNOWN_CAPABILITIES.has(bare)) throw new InvalidArgumentError(`${field}: unknown capability ${JSON.stringify(name)}`);
  return `CAP_${bare}`;
}

function capabilities(field: string, caps: Capability__Output | null): { capAdd: string[]; capDrop: string[] } {
  if (!caps) return { capAdd: [], capDrop: [] };
  if (caps.addAmbientCapabilities.length > 0) {
    throw new UnimplementedError(`${field}.add_ambient_capabilities: Docker cannot set ambient capabilities`);
  }
  return {
    capAdd: caps.addCapabilities.map((c) => normalizeCapability(`${field}.add_capabilities`, c)),
    capDrop: caps.dropCapabilities.map((c) => normalizeCapability(`${field}.drop_capabilities`, c)),
  };
}

function user(field: string, sc: LinuxContainerSecurityContext__Output): string {
  const group = sc.runAsGroup ? sc.runAsGroup.value : undefined;
  let who: string | undefined;
  if (sc.runAsUser) {
    if (!/^\d+$/.test(sc.runAsUser.value)) throw new InvalidArgumentError(`${field}.run_as_user must not be negative`);
    who = sc.runAsUser.value;
  } else if (sc.runAsUsername !== '') {
    if (/[:\s]/.test(sc.runAsUsername)) throw new InvalidArgumentError(`${field}.run_as_username: ${JSON.stringify(sc.runAsUsername)} is not a user name`);
    who = sc.runAsUsername;
  }
  if (group !== undefined) {
    if (who === undefined) throw new InvalidArgumentError(`${field}.run_as_group needs run_as_user or run_as_username`);
    if (!/^\d+$/.test(group)) throw new InvalidArgumentError(`${field}.run_as_group must not be negative`);
    return `${who}:${group}`;
  }
  return who ?? '';
}

/**
 * Seccomp as Docker's security option. An absent profile means unconfined, as it did for
 * dockershim (Kubernetes' own default); RuntimeDefault keeps Docker's default profile; a
 * Localhost profile is a JSON file on this host, which Docker takes inline.
 */
export function seccompOption(field: string, profile: SecurityProfile__Output | null, legacyPath: string, host: HostFiles): string | undefined {
  let kind: 'default' | 'unconfined' | 'file';
  let file = '';
  if (profile) {
    if (profile.profileType === 'RuntimeDefault') kind = 'default';
    else if (profile.profileType === 'Unconfined') kind = 'unconfined';
    else {
      kind = 'file';
      file = profile.localhostRef;
    }
  } else if (legacyPath === '' || legacyPath === 'unconfined') {
    kind = 'unconfined';
  } else if (legacyPath === 'runtime/default' || legacyPath === 'docker/default') {
    kind = 'default';
  } else if (legacyPath.startsWith('localhost/')) {
    kind = 'file';
    file = legacyPath.slice('localhost/'.length);
  } else {
    throw new InvalidArgumentError(`${field}.seccomp_profile_path: unknown profile ${JSON.stringify(legacyPath)}`);
  }
  if (kind === 'default') return undefined;
  if (kind === 'unconfined') return 'seccomp=unconfined';
  const where = profile ? `${field}.seccomp.localhost_ref` : `${field}.seccomp_profile_path`;
  if (!file.startsWith('/')) throw new InvalidArgumentError(`${where}: ${JSON.stringify(file)} must be an absolute path`);
  let text: string;
  try {
    text = host.readText(file);
  } catch (err) {
    throw new InvalidArgumentError(`${where}: cannot read seccomp profile ${JSON.stringify(file)}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  try {
    JSON.parse(text);
  } catch {
    throw new InvalidArgumentError(`${where}: seccomp profile ${JSON.stringify(file)} is not JSON`);
  }
  return `seccomp=${text}`;
}

/** AppArmor as Docker's security option; RuntimeDefault (and nothing) keeps Docker's profile. */
export function apparmorOption(field: string, profile: SecurityProfile__Output | null, legacy: string): string | undefined {
  let name: string | undefined;
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
    throw new InvalidArgumentError(`${field}.apparmor_profile: unknown profile ${JSON.stringify(legacy)}`);
  }
  if (name === '' || /[\s=,]/.test(name)) throw new InvalidArgumentError(`${field}.apparmor: ${JSON.stringify(name)} is not a profile name`);
  return `apparmor=${name}`;
}

function selinuxOptions(se: SELinuxOption__Output | null): string[] {
  if (!se) return [];
  const out: string[] = [];
  if (se.user) out.push(`label=user:${se.user}`);
  if (se.role) out.push(`label=role:${se.role}`);
  if (se.type) out.push(`label=type:${se.type}`);
  if (se.level) out.push(`label=level:${se.level}`);
  return out;
}

function absolutePaths(field: string, paths: string[]): string[] | undefined {
  for (const p of paths) if (!p.startsWith('/')) throw new InvalidArgumentError(`${field}: ${JSON.stringify(p)} must be an absolute path`);
  // Empty means "not given" on the wire: Docker then applies its own defaults.
  return paths.length > 0 ? [...paths] : undefined;
}

export function translateSecurityContext(
  field: string,
  sc: LinuxContainerSecurityContext__Output | null,
  host: HostFiles,
): SecurityTranslation {
  if (!sc) {
    return {
      privileged: false, capAdd: [], capDrop: [], user: '', groupAdd: [], readonlyRootfs: false,
      securityOpt: ['seccomp=unconfined'], maskedPaths: undefined, readonlyPaths: undefined,
    };
  }
  if (sc.supplementalGroupsPolicy === 'Strict') {
    throw new UnimplementedError(`${field}.supplemental_groups_policy: Docker always merges the image's groups; Strict is not supported`);
  }
  const securityOpt: string[] = [];
  if (!sc.privileged) {
    const seccomp = seccompOption(field, sc.seccomp, sc.seccompProfilePath, host);
    if (seccomp) securityOpt.push(seccomp);
    const apparmor = apparmorOption(field, sc.apparmor, sc.apparmorProfile);
    if (apparmor) securityOpt.push(apparmor);
  }
  securityOpt.push(...selinuxOptions(sc.selinuxOptions));
  if (sc.noNewPrivs) securityOpt.push('no-new-privileges');
  const groupAdd = sc.supplementalGroups.map((g) => {
    if (!/^\d+$/.test(g)) throw new InvalidArgumentError(`${field}.supplemental_groups: ${JSON.stringify(g)} is not a group ID`);
    return g;
  });
  return {
    privileged: sc.privileged,
    ...capabilities(`${field}.capabilities`, sc.capabilities),
    user: user(field, sc),
    groupAdd,
    readonlyRootfs: sc.readonlyRootfs,
    securityOpt,
    maskedPaths: absolutePaths(`${field}.masked_paths`, sc.maskedPaths),
    readonlyPaths: absolutePaths(`${field}.readonly_paths`, sc.readonlyPaths),
  };
}
