// CreateContainer's request (container config + its pod's sandbox config) as the one Docker
// create body it becomes. Pure apart from the injected host view; every refusal names the
// CRI field at fault.
import * as path from 'node:path';
import type { ContainerConfig__Output, NamespaceOption__Output, PodSandboxConfig__Output } from '../../cri/types';
import { cgroupParentFor } from '../../cgroups/driver';
import type { CgroupDriver } from '../../config/flags';
import type { ContainerCreateSpec } from '../../docker/types';
import { InvalidArgumentError, UnimplementedError } from '../../errors';
import { checkCriLabels, CONTAINER_LOG_PATH_LABEL, CONTAINER_TYPE_LABEL, SANDBOX_ID_LABEL, toDockerLabels, TYPE_CONTAINER } from '../../conventions/labels';
import { containerDockerName } from '../../conventions/naming';
import { validateId } from '../../conventions/ids';
import { toCdiDeviceRequests, toDockerDevices, toDockerMounts } from './container-mounts';
import { toDockerResources } from './container-resources';
import type { HostFiles } from './security-options';
import { translateSecurityContext } from './container-security';
import { dockerStopSignal } from '../../conventions/signals';
import { quote } from '../../util/quote';
import type { EngineFeatures } from '../../docker/docker-version';

export interface HostView extends HostFiles {
  /** A host path with symlinks resolved; a path that does not exist comes back unchanged. */
  resolvePath(p: string): string;
}

interface CreateInput {
  sandboxId: string;
  config: ContainerConfig__Output | null;
  sandboxConfig: PodSandboxConfig__Output | null;
  cgroupDriver: CgroupDriver;
  host: HostView;
  /** What the engine can do beyond API 1.41 (recursive or not read-only binds). */
  engine: EngineFeatures;
}

interface CreatePlan {
  spec: ContainerCreateSpec;
  /** Where the container's CRI log goes ("" when kubelet asked for none). */
  logPath: string;
}

// Docker keeps its own json-file copy only as the buffer the shim's log follower reads from;
// it is rotated so that it cannot fill the disk.
const DOCKER_LOG_CONFIG = { Type: 'json-file', Config: { 'max-size': '50m', 'max-file': '2' } };

/**
 * Docker's health check off, for every container the shim makes: kubelet owns probes, and an
 * image's HEALTHCHECK would have Docker exec into the container on the image's schedule (every
 * millisecond if it says so) outside the pod's cgroup. containerd and CRI-O ignore it too.
 */
export const NO_HEALTHCHECK = { Test: ['NONE'] };

/** A name part must not carry Docker's name delimiter, or the name could not be parsed back. */
function namePart(field: string, value: string): string {
  if (value === '') throw new InvalidArgumentError(`${field} is required`);
  if (!/^[A-Za-z0-9][A-Za-z0-9.-]*$/.test(value)) {
    throw new InvalidArgumentError(`${field}: ${quote(value)} may only have letters, digits, '.' and '-'`);
  }
  return value;
}

export function logPathOf(logDirectory: string, logPath: string): string {
  if (logPath === '') return '';
  if (logDirectory === '') throw new InvalidArgumentError('sandbox_config.log_directory is required when config.log_path is set');
  if (!path.isAbsolute(logDirectory)) throw new InvalidArgumentError(`sandbox_config.log_directory: ${quote(logDirectory)} must be an absolute path`);
  const full = path.resolve(logDirectory, logPath);
  if (path.isAbsolute(logPath) || !full.startsWith(path.resolve(logDirectory) + path.sep)) {
    throw new InvalidArgumentError(`config.log_path: ${quote(logPath)} must be a path inside the pod's log directory`);
  }
  return full;
}

/**
 * The environment as Docker's `KEY=VALUE` strings. CRI's values are bytes (v1.37); Docker's
 * are JSON strings, so a value goes to Docker exactly when it is UTF-8 (Docker's Go decoder
 * would turn anything else into U+FFFD) without a NUL (which ends an environment string);
 * any other value is refused, naming the variable, rather than changed.
 */
export function envList(envs: ContainerConfig__Output['envs']): string[] {
  return envs.map((kv, i) => {
    const field = `config.envs[${i}]`;
    if (kv.key === '' || /[=\0]/.test(kv.key)) throw new InvalidArgumentError(`${field}.key: ${quote(kv.key)} is not a variable name`);
    const value = kv.value.toString('utf8');
    if (!Buffer.from(value, 'utf8').equals(kv.value)) {
      throw new InvalidArgumentError(`${field}.value of ${quote(kv.key)}: not valid UTF-8, which Docker cannot carry as it is`);
    }
    if (value.includes('\0')) throw new InvalidArgumentError(`${field}.value of ${quote(kv.key)}: a NUL byte would end the variable's value`);
    return `${kv.key}=${value}`;
  });
}

interface NamespaceModes {
  NetworkMode: string;
  IpcMode: string;
  PidMode: string;
  UTSMode: string;
}

/**
 * Network and IPC are the pause container's. Docker cannot join another container's UTS
 * namespace: a container on the pause container's network gets its own, holding the pod's
 * hostname; a host-network pod's containers use the node's. The PID namespace is the pod's,
 * the container's own, the node's, or another container's.
 */
export function namespaceModes(sandboxId: string, ns: NamespaceOption__Output | null): NamespaceModes {
  const pod = `container:${sandboxId}`;
  if (ns?.usernsOptions && ns.usernsOptions.mode !== 'NODE') {
    throw new UnimplementedError('config.linux.security_context.namespace_options.userns_options: Docker cannot give a pod its own user namespace');
  }
  let PidMode: string;
  switch (ns?.pid ?? 'CONTAINER') {
    case 'POD':
      PidMode = pod;
      break;
    case 'NODE':
      PidMode = 'host';
      break;
    case 'TARGET':
      PidMode = `container:${validateId('config.linux.security_context.namespace_options.target_id', ns?.targetId ?? '')}`;
      break;
    default:
      PidMode = '';
  }
  return { NetworkMode: pod, IpcMode: pod, PidMode, UTSMode: ns?.network === 'NODE' ? 'host' : '' };
}

export function buildCreatePlan(input: CreateInput): CreatePlan {
  const { config, sandboxConfig } = input;
  if (!config) throw new InvalidArgumentError('config is required');
  if (!sandboxConfig) throw new InvalidArgumentError('sandbox_config is required');
  if (!config.metadata) throw new InvalidArgumentError('config.metadata is required');
  const name = namePart('config.metadata.name', config.metadata.name);
  const image = config.image?.image ?? '';
  if (image === '') throw new InvalidArgumentError('config.image.image is required');
  const pod = sandboxConfig.metadata;
  if (!pod) throw new InvalidArgumentError('sandbox_config.metadata is required');
  if (config.stdinOnce && !config.stdin) throw new InvalidArgumentError('config.stdin_once needs config.stdin');
  // The shim's own labels come from the shim alone: a request's log path label would otherwise
  // name the file StartContainer writes the container's output to.
  checkCriLabels('config.labels', config.labels ?? {});

  const logPath = logPathOf(sandboxConfig.logDirectory, config.logPath);
  const linux = config.linux;
  const sec = translateSecurityContext('config.linux.security_context', linux?.securityContext ?? null, input.host);
  const ns = namespaceModes(input.sandboxId, linux?.securityContext?.namespaceOptions ?? null);
  const resources = toDockerResources('config.linux.resources', linux?.resources ?? null);
  const mounts = toDockerMounts('config.mounts', config.mounts, (p) => input.host.resolvePath(p), input.engine);
  const devices = toDockerDevices('config.devices', config.devices);
  const deviceRequests = toCdiDeviceRequests('config.CDI_devices', config.CDIDevices, input.engine);
  const stopSignal = dockerStopSignal(config.stopSignal);

  // The log path is written even when empty: the image's labels merge into the container's,
  // and an image's own log path label would otherwise name the file StartContainer appends to.
  const internal = { [CONTAINER_TYPE_LABEL]: TYPE_CONTAINER, [SANDBOX_ID_LABEL]: input.sandboxId, [CONTAINER_LOG_PATH_LABEL]: logPath };
  const dockerName = containerDockerName(name, config.metadata.attempt, {
    name: namePart('sandbox_config.metadata.name', pod.name),
    namespace: namePart('sandbox_config.metadata.namespace', pod.namespace),
    uid: namePart('sandbox_config.metadata.uid', pod.uid),
  });

  const spec: ContainerCreateSpec = {
    name: dockerName,
    Image: image,
    Healthcheck: NO_HEALTHCHECK,
    Env: envList(config.envs),
    WorkingDir: config.workingDir,
    Labels: toDockerLabels(config.labels ?? {}, config.annotations ?? {}, internal, dockerName),
    Tty: config.tty,
    OpenStdin: config.stdin,
    StdinOnce: config.stdinOnce,
    AttachStdin: config.stdin,
    AttachStdout: true,
    AttachStderr: true,
    HostConfig: {
      ...ns,
      Binds: mounts.binds,
      ...(mounts.mounts.length > 0 ? { Mounts: mounts.mounts } : {}),
      ...(deviceRequests.length > 0 ? { DeviceRequests: deviceRequests } : {}),
      Devices: devices,
      CgroupParent: cgroupParentFor(input.cgroupDriver, sandboxConfig.linux?.cgroupParent ?? ''),
      ...resources,
      Privileged: sec.privileged,
      CapAdd: sec.capAdd,
      CapDrop: sec.capDrop,
      GroupAdd: sec.groupAdd,
      ReadonlyRootfs: sec.readonlyRootfs,
      SecurityOpt: sec.securityOpt,
      LogConfig: DOCKER_LOG_CONFIG,
      RestartPolicy: { Name: 'no' },
    },
  };
  // Command replaces the image's entrypoint (and with it the image's cmd); args alone
  // replace only the cmd: Docker's own merge rules give exactly Kubernetes' override rules.
  if (config.command.length > 0) spec.Entrypoint = [...config.command];
  if (config.args.length > 0) spec.Cmd = [...config.args];
  if (sec.user !== '') spec.User = sec.user;
  if (stopSignal) spec.StopSignal = stopSignal;
  if (sec.maskedPaths) spec.HostConfig!.MaskedPaths = sec.maskedPaths;
  if (sec.readonlyPaths) spec.HostConfig!.ReadonlyPaths = sec.readonlyPaths;
  return { spec, logPath };
}
