// A SandboxPlan turned into the Docker create request of its pause container. Pure: every
// input (image, cgroup driver, Docker runtime) is passed in.
import { cgroupParentFor } from '../../cgroups/driver';
import type { CgroupDriver } from '../../config/flags';
import type { ContainerCreateSpec, HostConfig } from '../../docker/types';
import { CONTAINER_TYPE_LABEL, RUNTIME_HANDLER_LABEL, TYPE_SANDBOX, toDockerLabels } from '../../conventions/labels';
import { sandboxDockerName } from '../../conventions/naming';
import { NO_HEALTHCHECK } from './container-create-spec';
import type { SandboxPlan, SandboxSecurity } from './sandbox-plan';

/** /dev/shm of a pod that has its own IPC namespace (Docker's default, stated so it is ours). */
export const SANDBOX_SHM_SIZE_BYTES = 64 * 1024 * 1024;
/**
 * The pause container should be the last thing the OOM killer picks in its pod: without it
 * the pod's namespaces go. kubelet uses the same value for infrastructure containers.
 */
export const PAUSE_OOM_SCORE_ADJ = -998;

export interface SandboxCreateInputs {
  image: string;
  cgroupDriver: CgroupDriver;
  /** The Docker runtime name; undefined for Docker's default. */
  dockerRuntime: string | undefined;
  /** The pause container's Docker network mode, as the network manager decides; undefined for Docker's bridge. */
  networkMode: 'host' | 'none' | undefined;
}

/** Docker's port key and bindings for the plan's port mappings. */
export function portSpec(plan: Pick<SandboxPlan, 'portMappings' | 'hostNetwork'>): {
  exposed: Record<string, Record<string, never>>;
  bindings: Record<string, Array<{ HostIp: string; HostPort: string }>>;
} {
  const exposed: Record<string, Record<string, never>> = {};
  const bindings: Record<string, Array<{ HostIp: string; HostPort: string }>> = {};
  for (const m of plan.portMappings) {
    const key = `${m.containerPort}/${m.protocol.toLowerCase()}`;
    exposed[key] = {};
    // With host networking the ports are the host's already; hostPort 0 only exposes.
    if (plan.hostNetwork || m.hostPort === 0) continue;
    (bindings[key] ??= []).push({ HostIp: m.hostIp, HostPort: String(m.hostPort) });
  }
  return { exposed, bindings };
}

function userOf(security: SandboxSecurity): string | undefined {
  if (security.runAsUser === undefined) return undefined;
  return security.runAsGroup === undefined ? String(security.runAsUser) : `${security.runAsUser}:${security.runAsGroup}`;
}

export function sandboxCreateSpec(plan: SandboxPlan, inputs: SandboxCreateInputs): ContainerCreateSpec {
  // The runtime handler is written even when it is the default (''), as the log path is on a
  // container: neither is then the pause image's label.
  const internal = { [CONTAINER_TYPE_LABEL]: TYPE_SANDBOX, [RUNTIME_HANDLER_LABEL]: plan.runtimeHandler };
  const dockerName = sandboxDockerName(plan.metadata);
  const ports = portSpec(plan);

  const host: HostConfig = {
    IpcMode: plan.hostIpc ? 'host' : 'shareable',
    Privileged: plan.security.privileged,
    ReadonlyRootfs: plan.security.readonlyRootfs,
    OomScoreAdj: PAUSE_OOM_SCORE_ADJ,
    SecurityOpt: plan.security.securityOpt,
  };
  if (inputs.networkMode !== undefined) host.NetworkMode = inputs.networkMode;
  // Docker publishes host ports only on its own bridge; a plugin's network maps them itself.
  else if (Object.keys(ports.bindings).length > 0) host.PortBindings = ports.bindings;
  if (plan.hostPid) host.PidMode = 'host';
  if (!plan.hostIpc) host.ShmSize = SANDBOX_SHM_SIZE_BYTES;
  if (plan.dns) {
    // Docker writes these into the sandbox's resolv.conf; containers joining its network share it.
    if (plan.dns.servers.length > 0) host.Dns = plan.dns.servers;
    if (plan.dns.searches.length > 0) host.DnsSearch = plan.dns.searches;
    if (plan.dns.options.length > 0) host.DnsOptions = plan.dns.options;
  }
  if (Object.keys(plan.sysctls).length > 0) host.Sysctls = plan.sysctls;
  if (plan.security.supplementalGroups.length > 0) host.GroupAdd = plan.security.supplementalGroups.map(String);
  const parent = cgroupParentFor(inputs.cgroupDriver, plan.cgroupParent);
  if (parent !== '') host.CgroupParent = parent;
  if (inputs.dockerRuntime !== undefined) host.Runtime = inputs.dockerRuntime;
  if (plan.resources) Object.assign(host, plan.resources.docker);

  const spec: ContainerCreateSpec = {
    name: dockerName,
    Image: inputs.image,
    Healthcheck: NO_HEALTHCHECK,
    Labels: toDockerLabels(plan.labels, plan.annotations, internal, dockerName),
    HostConfig: host,
  };
  if (plan.hostname !== '') spec.Hostname = plan.hostname;
  const user = userOf(plan.security);
  if (user !== undefined) spec.User = user;
  if (Object.keys(ports.exposed).length > 0) spec.ExposedPorts = ports.exposed;
  return spec;
}
