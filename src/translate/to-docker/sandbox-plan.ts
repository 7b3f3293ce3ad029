// RunPodSandbox's request checked field by field and reduced to a SandboxPlan: what the pause
// container must look like, with every choice already made. Anything wrong is an
// InvalidArgumentError naming the CRI field, raised before anything is created. Pure.
import { isIP } from 'node:net';
import * as path from 'node:path';
import type { CheckpointPortMapping, PortProtocol } from '../../checkpoint/checkpoint';
import type {
  DNSConfig__Output,
  LinuxSandboxSecurityContext__Output,
  NamespaceOption__Output,
  PodSandboxConfig__Output,
  PortMapping__Output,
  RunPodSandboxRequest__Output,
} from '../../cri/types';
import { InvalidArgumentError, UnimplementedError } from '../../errors';
import { checkCriLabels } from '../../conventions/labels';
import type { PodMetadata } from '../../conventions/naming';
import { checkResources, type CheckedResources } from './linux-resources';
import { apparmorOption, nodeHostFiles, seccompOption, selinuxOptions, uidGid, type HostFiles } from './security-options';
import { quote } from '../../util/quote';



export interface SandboxSecurity {
  runAsUser?: number;
  runAsGroup?: number;
  readonlyRootfs: boolean;
  privileged: boolean;
  supplementalGroups: number[];
  /** Docker's security options: seccomp, AppArmor and SELinux (see ./security-options.ts). */
  securityOpt: string[];
}

export interface SandboxPlan {
  metadata: PodMetadata;
  hostname: string;
  dns: { servers: string[]; searches: string[]; options: string[] } | undefined;
  portMappings: CheckpointPortMapping[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  hostNetwork: boolean;
  hostPid: boolean;
  hostIpc: boolean;
  sysctls: Record<string, string>;
  security: SandboxSecurity;
  cgroupParent: string;
  /** Pod-level resources, applied to the pause container. */
  resources: CheckedResources | undefined;
  /** Pod overhead: checked and recorded; kubelet already counts it in the pod cgroup. */
  overhead: CheckedResources | undefined;
  runtimeHandler: string;
}

// Docker container names allow [a-zA-Z0-9][a-zA-Z0-9_.-]; '_' separates the parts of ours.
const NAME_PART = /^[a-zA-Z0-9][a-zA-Z0-9.-]*$/;
const HOSTNAME = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*$/;
const HOSTNAME_MAX = 64; // Linux HOST_NAME_MAX
const SYSCTL_NAME = /^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$/;
const SYSCTL_NAME_MAX = 253;
const MAX_DNS_SEARCHES = 32; // kubelet's own limit
const DNS_SEARCH_MAX = 253;
const DNS_OPTION = /^[^\s:]+(:\S*)?$/;
const RUNTIME_HANDLER = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/** Sysctls that live in the IPC namespace; anything under net.* lives in the network namespace. */
const IPC_SYSCTLS = new Set([
  'kernel.msgmax',
  'kernel.msgmnb',
  'kernel.msgmni',
  'kernel.sem',
  'kernel.shmall',
  'kernel.shmmax',
  'kernel.shmmni',
  'kernel.shm_rmid_forced',
]);

function required(field: string, value: string): string {
  if (value === '') throw new InvalidArgumentError(`${field} is required`);
  return value;
}

function metadataOf(config: PodSandboxConfig__Output): PodMetadata {
  const m = config.metadata;
  if (!m) throw new InvalidArgumentError('config.metadata is required');
  for (const [key, value] of [
    ['name', m.name],
    ['namespace', m.namespace],
    ['uid', m.uid],
  ] as const) {
    required(`config.metadata.${key}`, value);
    if (!NAME_PART.test(value)) {
      throw new InvalidArgumentError(
        `config.metadata.${key}: ${JSON.stringify(value)} may contain only letters, digits, '.' and '-' (and must start with a letter or digit)`,
      );
    }
  }
  return { name: m.name, namespace: m.namespace, uid: m.uid, attempt: m.attempt };
}

function hostnameOf(hostname: string): string {
  if (hostname === '') return '';
  if (hostname.length > HOSTNAME_MAX || !HOSTNAME.test(hostname)) {
    throw new InvalidArgumentError(`config.hostname: ${quote(hostname)} is not a valid host name (RFC 1123, at most ${HOSTNAME_MAX} characters)`);
  }
  return hostname;
}

function dnsOf(dns: DNSConfig__Output | null): SandboxPlan['dns'] {
  if (!dns || (dns.servers.length === 0 && dns.searches.length === 0 && dns.options.length === 0)) return undefined;
  dns.servers.forEach((s, i) => {
    if (isIP(s) === 0) throw new InvalidArgumentError(`config.dns_config.servers[${i}]: ${quote(s)} is not an IP address`);
  });
  if (dns.searches.length > MAX_DNS_SEARCHES) {
    throw new InvalidArgumentError(`config.dns_config.searches: ${dns.searches.length} domains, at most ${MAX_DNS_SEARCHES} allowed`);
  }
  dns.searches.forEach((s, i) => {
    if (s === '' || /\s/.test(s) || s.length > DNS_SEARCH_MAX) {
      throw new InvalidArgumentError(`config.dns_config.searches[${i}]: ${quote(s)} is not a domain name`);
    }
  });
  dns.options.forEach((o, i) => {
    if (!DNS_OPTION.test(o)) {
      throw new InvalidArgumentError(`config.dns_config.options[${i}]: ${quote(o)} is not a resolver option ("name" or "name:value")`);
    }
  });
  return { servers: [...dns.servers], searches: [...dns.searches], options: [...dns.options] };
}

function protocolOf(field: string, p: PortMapping__Output['protocol']): PortProtocol {
  if (p === 'TCP' || p === 'UDP' || p === 'SCTP') return p;
  throw new InvalidArgumentError(`${field}.protocol: ${quote(p)} is not TCP, UDP or SCTP`);
}

function portMappingsOf(mappings: PortMapping__Output[]): CheckpointPortMapping[] {
  const seen = new Map<string, number>();
  return mappings.map((m, i) => {
    const field = `config.port_mappings[${i}]`;
    const protocol = protocolOf(field, m.protocol);
    if (!Number.isInteger(m.containerPort) || m.containerPort < 1 || m.containerPort > 65535) {
      throw new InvalidArgumentError(`${field}.container_port: ${m.containerPort} is outside 1..65535`);
    }
    if (!Number.isInteger(m.hostPort) || m.hostPort < 0 || m.hostPort > 65535) {
      throw new InvalidArgumentError(`${field}.host_port: ${m.hostPort} is outside 0..65535`);
    }
    if (m.hostIp !== '' && isIP(m.hostIp) === 0) {
      throw new InvalidArgumentError(`${field}.host_ip: ${quote(m.hostIp)} is not an IP address`);
    }
    if (m.hostPort !== 0) {
      const key = `${protocol}/${m.hostIp}/${m.hostPort}`;
      const earlier = seen.get(key);
      if (earlier !== undefined) {
        throw new InvalidArgumentError(`${field}.host_port: ${m.hostPort}/${protocol} is already mapped by port_mappings[${earlier}]`);
      }
      seen.set(key, i);
    }
    return { protocol, containerPort: m.containerPort, hostPort: m.hostPort, hostIp: m.hostIp };
  });
}

function labelsOf(labels: Record<string, string>): Record<string, string> {
  checkCriLabels('config.labels', labels);
  return { ...labels };
}

interface Namespaces {
  hostNetwork: boolean;
  hostPid: boolean;
  hostIpc: boolean;
}

function namespacesOf(ns: NamespaceOption__Output | null | undefined): Namespaces {
  const field = 'config.linux.security_context.namespace_options';
  if (!ns) return { hostNetwork: false, hostPid: false, hostIpc: false };
  for (const [key, mode] of [
    ['network', ns.network],
    ['pid', ns.pid],
    ['ipc', ns.ipc],
  ] as const) {
    if (mode === 'TARGET') throw new InvalidArgumentError(`${field}.${key}: TARGET is only valid for a container, not a pod sandbox`);
  }
  if (ns.targetId !== '') throw new InvalidArgumentError(`${field}.target_id: only valid with namespace mode TARGET`);
  if (ns.usernsOptions && ns.usernsOptions.mode !== 'NODE') {
    throw new UnimplementedError(`${field}.userns_options: Docker cannot give a pod its own user namespace (mode must be NODE)`);
  }
  // A sandbox's own namespace (POD) and CONTAINER are the same thing for the pause container.
  return { hostNetwork: ns.network === 'NODE', hostPid: ns.pid === 'NODE', hostIpc: ns.ipc === 'NODE' };
}

/** kubelet may write sysctls with '/' separators ("net/ipv4/ip_forward"); Docker wants dots. */
function dottedSysctl(name: string): string {
  const firstSep = name.search(/[./]/);
  if (firstSep < 0 || name[firstSep] === '.') return name;
  return name.replace(/[./]/g, (c) => (c === '/' ? '.' : '/'));
}

function sysctlsOf(sysctls: Record<string, string>, ns: Namespaces): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [raw, value] of Object.entries(sysctls)) {
    const field = `config.linux.sysctls[${JSON.stringify(raw)}]`;
    if (raw.length > SYSCTL_NAME_MAX || !SYSCTL_NAME.test(raw)) throw new InvalidArgumentError(`${field}: not a valid sysctl name`);
    const name = dottedSysctl(raw);
    const isNet = name.startsWith('net.');
    const isIpc = IPC_SYSCTLS.has(name) || name.startsWith('fs.mqueue.');
    if (!isNet && !isIpc) {
      throw new InvalidArgumentError(`${field}: not a namespaced sysctl (only net.*, fs.mqueue.* and the IPC kernel.* ones); it would change the whole node`);
    }
    if (isNet && ns.hostNetwork) throw new InvalidArgumentError(`${field}: a net.* sysctl conflicts with the host network namespace`);
    if (isIpc && ns.hostIpc) throw new InvalidArgumentError(`${field}: an IPC sysctl conflicts with the host IPC namespace`);
    if (value === '' || /[\n\0]/.test(value)) throw new InvalidArgumentError(`${field}: value ${quote(value)} is not a sysctl value`);
    out[name] = value;
  }
  return out;
}

function idValue(field: string, v: { value: string } | null): number | undefined {
  return v ? uidGid(field, v.value) : undefined;
}

function securityOf(sc: LinuxSandboxSecurityContext__Output | null, host: HostFiles): SandboxSecurity {
  const field = 'config.linux.security_context';
  if (!sc) {
    // No profile means unconfined, as for dockershim.
    return { readonlyRootfs: false, privileged: false, supplementalGroups: [], securityOpt: ['seccomp=unconfined'] };
  }
  const runAsUser = idValue(`${field}.run_as_user`, sc.runAsUser);
  const runAsGroup = idValue(`${field}.run_as_group`, sc.runAsGroup);
  if (runAsGroup !== undefined && runAsUser === undefined) {
    throw new InvalidArgumentError(`${field}.run_as_group: needs run_as_user as well (Docker takes them as "uid:gid")`);
  }
  const supplementalGroups = sc.supplementalGroups.map((g, i) => uidGid(`${field}.supplemental_groups[${i}]`, g));
  const securityOpt = [
    seccompOption(field, sc.seccomp, sc.seccompProfilePath, host),
    apparmorOption(field, sc.apparmor, ''),
    ...selinuxOptions(field, sc.selinuxOptions),
  ].filter((o): o is string => o !== undefined);
  const out: SandboxSecurity = { readonlyRootfs: sc.readonlyRootfs, privileged: sc.privileged, supplementalGroups, securityOpt };
  if (runAsUser !== undefined) out.runAsUser = runAsUser;
  if (runAsGroup !== undefined) out.runAsGroup = runAsGroup;
  return out;
}

function cgroupParentOf(parent: string): string {
  if (parent === '') return '';
  const field = 'config.linux.cgroup_parent';
  if (parent.endsWith('.slice') && /^[a-zA-Z0-9_.:-]+$/.test(parent)) return parent;
  if (path.isAbsolute(parent) && path.normalize(parent) === parent && !/[\s,]/.test(parent)) return parent;
  throw new InvalidArgumentError(`${field}: ${quote(parent)} is neither an absolute cgroup path nor a systemd slice`);
}

/** Checks RunPodSandbox's request and decides what the pause container will be. */
export function planSandbox(req: RunPodSandboxRequest__Output, host: HostFiles = nodeHostFiles): SandboxPlan {
  const config = req.config;
  if (!config) throw new InvalidArgumentError('config is required');
  const metadata = metadataOf(config);
  const linux = config.linux;
  const ns = namespacesOf(linux?.securityContext?.namespaceOptions);
  const handler = req.runtimeHandler;
  if (handler !== '' && !RUNTIME_HANDLER.test(handler)) {
    throw new InvalidArgumentError(`runtime_handler: ${quote(handler)} is not a runtime name`);
  }
  return {
    metadata,
    hostname: hostnameOf(config.hostname),
    dns: dnsOf(config.dnsConfig),
    portMappings: portMappingsOf(config.portMappings),
    labels: labelsOf(config.labels),
    annotations: { ...config.annotations },
    ...ns,
    sysctls: sysctlsOf(linux?.sysctls ?? {}, ns),
    security: securityOf(linux?.securityContext ?? null, host),
    cgroupParent: cgroupParentOf(linux?.cgroupParent ?? ''),
    resources: linux?.resources ? checkResources('config.linux.resources', linux.resources) : undefined,
    overhead: linux?.overhead ? checkResources('config.linux.overhead', linux.overhead) : undefined,
    runtimeHandler: handler,
  };
}
