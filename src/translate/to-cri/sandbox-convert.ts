// What Docker (and the checkpoint) say about a pause container, turned into the CRI's
// PodSandbox and PodSandboxStatus. Pure.
import type { SandboxCheckpoint } from '../../checkpoint/checkpoint';
import type { PodRef } from '../../network/network-host';
import type { NamespaceOption, PodSandbox, PodSandboxStatus } from '../../cri/types';
import type { ContainerInspect } from '../../docker/types';
import { sandboxStateOf, type ShimObject } from '../../object-store/shim-objects';
import { rfc3339ToNanos, secondsToNanos } from '../../util/time';
import { bareDockerName, parseSandboxDockerName, type PodMetadata } from '../../conventions/naming';
import { fromDockerLabels, runtimeHandlerFromDocker, shimLabels } from '../../conventions/labels';

/** A sandbox's metadata from its Docker name, else from its checkpoint. */
function sandboxMetadata(dockerName: string, checkpoint: SandboxCheckpoint | undefined): PodMetadata {
  const parsed = parseSandboxDockerName(dockerName);
  if (parsed) return { name: parsed.name, namespace: parsed.namespace, uid: parsed.uid, attempt: parsed.attempt };
  if (checkpoint) return checkpointMetadata(checkpoint);
  return { name: '', namespace: '', uid: '', attempt: 0 };
}

function checkpointMetadata(c: SandboxCheckpoint): PodMetadata {
  return { name: c.name, namespace: c.namespace, uid: c.uid, attempt: c.attempt };
}

/**
 * The checkpoint when it is the shim's own; one read from cri-dockerd's file has blanks where
 * the pause container's Docker name and labels hold the truth.
 */
function ownCheckpoint(c: SandboxCheckpoint | undefined): SandboxCheckpoint | undefined {
  return c?.fromCriDockerd ? undefined : c;
}

/** The sandbox as ListPodSandbox gives it; its label maps are the object's own (read, never change them). */
export function sandboxFromObject(c: ShimObject, checkpoint: SandboxCheckpoint | undefined): PodSandbox {
  return {
    id: c.id,
    metadata: sandboxMetadata(c.name, checkpoint),
    state: sandboxStateOf(c.status === 'running'),
    // The list API has whole seconds only; the checkpoint keeps Docker's nanoseconds, so that
    // list and status agree and kubelet can order attempts made within one second.
    createdAt: ownCheckpoint(checkpoint)?.createdAt ?? secondsToNanos(c.createdSeconds),
    labels: c.labels,
    annotations: c.annotations,
    runtimeHandler: runtimeHandlerFromDocker(c.dockerLabels),
  };
}

/** A sandbox known only from its checkpoint (its pause container is gone): NOTREADY. */
export function sandboxFromCheckpoint(c: SandboxCheckpoint): PodSandbox {
  return {
    id: c.id,
    metadata: checkpointMetadata(c),
    state: 'SANDBOX_NOTREADY',
    createdAt: c.createdAt,
    labels: { ...c.labels },
    annotations: { ...c.annotations },
    runtimeHandler: c.runtimeHandler,
  };
}

function namespaceOptions(hostNetwork: boolean, hostPid: boolean, hostIpc: boolean): NamespaceOption {
  return {
    network: hostNetwork ? 'NODE' : 'POD',
    pid: hostPid ? 'NODE' : 'CONTAINER',
    ipc: hostIpc ? 'NODE' : 'POD',
  };
}

function networkStatus(ips: readonly string[]): PodSandboxStatus['network'] {
  return { ip: ips[0] ?? '', additionalIps: ips.slice(1).map((ip) => ({ ip })) };
}

export function statusFromInspect(c: ContainerInspect, checkpoint: SandboxCheckpoint | undefined, ips: readonly string[]): PodSandboxStatus {
  const own = shimLabels(c.Config.Labels, c.Name);
  const { labels, annotations } = fromDockerLabels(own);
  const host = c.HostConfig;
  return {
    id: c.Id,
    metadata: sandboxMetadata(bareDockerName(c.Name), checkpoint),
    state: sandboxStateOf(c.State.Running),
    createdAt: rfc3339ToNanos(c.Created),
    network: networkStatus(ips),
    linux: { namespaces: { options: namespaceOptions(host.NetworkMode === 'host', host.PidMode === 'host', host.IpcMode === 'host') } },
    labels,
    annotations,
    runtimeHandler: runtimeHandlerFromDocker(own),
  };
}

export function statusFromCheckpoint(c: SandboxCheckpoint): PodSandboxStatus {
  const s = sandboxFromCheckpoint(c);
  return {
    ...s,
    network: networkStatus([]),
    linux: { namespaces: { options: namespaceOptions(c.hostNetwork, false, false) } },
  };
}

/** Whether the pod uses the node's network: its checkpoint says, else the pause container's mode. */
export function usesHostNetwork(networkMode: string | undefined, checkpoint: SandboxCheckpoint | undefined): boolean {
  return checkpoint ? checkpoint.hostNetwork : networkMode === 'host';
}

/**
 * Who the pod is, as the network plugin is told: from the pause container's Docker name and
 * labels, else from the checkpoint (the container may be gone).
 */
export function podRefOf(
  sandboxId: string,
  dockerName: string,
  dockerLabels: Readonly<Record<string, string>> | null | undefined,
  checkpoint: SandboxCheckpoint | undefined,
): PodRef {
  const meta = sandboxMetadata(bareDockerName(dockerName), checkpoint);
  const annotations = ownCheckpoint(checkpoint)?.annotations ?? fromDockerLabels(shimLabels(dockerLabels, dockerName)).annotations;
  return { podName: meta.name, podNamespace: meta.namespace, podUid: meta.uid, sandboxId, annotations };
}
