// The container's Linux security context, translated to the HostConfig and Config fields that
// Docker has for it (seccomp, AppArmor and SELinux through ./security-options.ts). Pure.
import type { Capability__Output, LinuxContainerSecurityContext__Output } from '../../cri/types';
import { InvalidArgumentError, UnimplementedError } from '../../errors';
import { apparmorOption, seccompOption, selinuxOptions, uidGid, type HostFiles } from './security-options';
import { quote } from '../../util/quote';

interface SecurityTranslation {
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
function normalizeCapability(field: string, name: string): string {
  const upper = name.trim().toUpperCase();
  if (upper === 'ALL') return 'ALL';
  const bare = upper.startsWith('CAP_') ? upper.slice(4) : upper;
  if (!KNOWN_CAPABILITIES.has(bare)) throw new InvalidArgumentError(`${field}: unknown capability ${quote(name)}`);
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
    who = String(uidGid(`${field}.run_as_user`, sc.runAsUser.value));
  } else if (sc.runAsUsername !== '') {
    if (/[:\s]/.test(sc.runAsUsername)) throw new InvalidArgumentError(`${field}.run_as_username: ${quote(sc.runAsUsername)} is not a user name`);
    who = sc.runAsUsername;
  }
  if (group !== undefined) {
    if (who === undefined) throw new InvalidArgumentError(`${field}.run_as_group needs run_as_user or run_as_username`);
    return `${who}:${uidGid(`${field}.run_as_group`, group)}`;
  }
  return who ?? '';
}

function absolutePaths(field: string, paths: string[]): string[] | undefined {
  for (const p of paths) if (!p.startsWith('/')) throw new InvalidArgumentError(`${field}: ${quote(p)} must be an absolute path`);
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
  securityOpt.push(...selinuxOptions(field, sc.selinuxOptions));
  if (sc.noNewPrivs) securityOpt.push('no-new-privileges');
  const groupAdd = sc.supplementalGroups.map((g, i) => String(uidGid(`${field}.supplemental_groups[${i}]`, g)));
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
