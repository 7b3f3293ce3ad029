// Docker's view of a container (its inspect document, or the shim's object of it) as CRI's
// ContainerStatus and Container. Pure.
import type {
  Container,
  ContainerResources,
  Mount,
  MountPropagation__Output,
  ContainerState__Output,
  ContainerStatus,
  ContainerUser,
} from '../../cri/types';
import type { ContainerInspect, DockerMount, ImageMount } from '../../docker/types';
import { containerStateOf, type ShimObject } from '../../object-store/shim-objects';
import { rfc3339ToNanos, secondsToNanos } from '../../util/time';
import { containerLogPath, fromDockerLabels, shimLabels } from '../../conventions/labels';
import { bareDockerName, parseContainerDockerName } from '../../conventions/naming';
import { criSignal } from '../../conventions/signals';

const REASON_COMPLETED = 'Completed';
const REASON_ERROR = 'Error';
const REASON_OOM_KILLED = 'OOMKilled';
const REASON_CANNOT_RUN = 'ContainerCannotRun';

/** The image a container runs, as resolved from Docker's image store by the handler. */
export interface ImageIdentity {
  id: string;
  /** A repo digest when the image has one (what kubelet shows as imageID), else the ID. */
  ref: string;
  /** The image's own labels, which Docker merged into the container's; undefined: the image is gone. */
  labels?: Readonly<Record<string, string>>;
}

export function stateOf(state: ContainerInspect['State']): ContainerState__Output {
  if (state.Running || state.Restarting || state.Paused) return 'CONTAINER_RUNNING';
  switch (state.Status) {
    case 'created':
      // A start that failed leaves the container "created", with the error recorded.
      return state.Error ? 'CONTAINER_EXITED' : 'CONTAINER_CREATED';
    case 'exited':
    case 'dead':
      return 'CONTAINER_EXITED';
    default:
      return 'CONTAINER_UNKNOWN';
  }
}

function metadataOf(dockerName: string): { name: string; attempt: number } {
  const parts = parseContainerDockerName(dockerName);
  return parts ? { name: parts.containerName, attempt: parts.attempt } : { name: bareDockerName(dockerName), attempt: 0 };
}

/** What the shim saw of a container beyond Docker's document of it. */
interface ContainerWitness {
  /** Docker's `oom` event came during the run the document shows. */
  oomKilled: boolean;
}

/** The exit code of a process ended by SIGKILL (128 + 9), the only way the OOM killer ends one. */
export const SIGKILL_EXIT_CODE = 137;

/**
 * Whether the kernel's OOM killer ended the run: it did if the run ended by SIGKILL and either
 * Docker's flag or its `oom` event (the flag races the exit, the event does not) says the OOM
 * killer acted in it. Any other exit (a SIGKILL from someone else, an exit code of the
 * process's own after the killer took one of its children) is not OOMKilled.
 */
function endedByOomKiller(state: ContainerInspect['State'], witness: ContainerWitness): boolean {
  return state.ExitCode === SIGKILL_EXIT_CODE && (state.OOMKilled || witness.oomKilled);
}

function reasonOf(inspect: ContainerInspect, state: ContainerState__Output, witness: ContainerWitness): { reason: string; message: string } {
  if (state !== 'CONTAINER_EXITED') return { reason: '', message: '' };
  const s = inspect.State;
  if (endedByOomKiller(s, witness)) return { reason: REASON_OOM_KILLED, message: s.Error ?? '' };
  if (!s.StartedAt || s.StartedAt.startsWith('0001-')) {
    if (s.Error) return { reason: REASON_CANNOT_RUN, message: s.Error };
  }
  return { reason: s.ExitCode === 0 ? REASON_COMPLETED : REASON_ERROR, message: s.Error ?? '' };
}

export function containerStatusFromInspect(
  inspect: ContainerInspect,
  image: ImageIdentity,
  user: ContainerUser | undefined,
  witness: ContainerWitness = { oomKilled: false },
): ContainerStatus {
  const state = stateOf(inspect.State);
  const { labels, annotations } = fromDockerLabels(shimLabels(inspect.Config.Labels, inspect.Name));
  const { reason, message } = reasonOf(inspect, state, witness);
  const status: ContainerStatus = {
    id: inspect.Id,
    metadata: metadataOf(inspect.Name),
    state,
    createdAt: rfc3339ToNanos(inspect.Created),
    startedAt: rfc3339ToNanos(inspect.State.StartedAt),
    finishedAt: rfc3339ToNanos(inspect.State.FinishedAt),
    exitCode: state === 'CONTAINER_EXITED' ? inspect.State.ExitCode : 0,
    image: { image: inspect.Config.Image },
    imageRef: image.ref,
    imageId: image.id,
    reason,
    message,
    labels,
    annotations,
    mounts: mountsFromInspect(inspect),
    logPath: containerLogPath(inspect.Config.Labels, inspect.Name, image.labels),
    resources: resourcesFromInspect(inspect),
    stopSignal: criSignal((inspect.Config as { StopSignal?: string }).StopSignal),
  };
  if (user) status.user = user;
  return status;
}

/** The container as ListContainers gives it; its label maps are the object's own (read, never change them). */
export function containerFromObject(c: ShimObject): Container {
  return {
    id: c.id,
    podSandboxId: c.sandboxId,
    metadata: metadataOf(c.name),
    image: { image: c.image },
    imageRef: c.imageId,
    imageId: c.imageId,
    state: containerStateOf(c.status),
    createdAt: secondsToNanos(c.createdSeconds),
    labels: c.labels,
    annotations: c.annotations,
  };
}

/** The process identity from /proc/<pid>/status (effective uid and gid, supplementary groups). */
export function userFromProcStatus(text: string): ContainerUser | undefined {
  const field = (name: string): string[] | undefined => {
    const m = new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(text);
    return m ? m[1]!.trim().split(/\s+/).filter(Boolean) : undefined;
  };
  const uid = field('Uid');
  const gid = field('Gid');
  if (!uid || !gid || uid.length < 2 || gid.length < 2) return undefined;
  return { linux: { uid: uid[1]!, gid: gid[1]!, supplementalGroups: field('Groups') ?? [] } };
}

/**
 * The container's mounts as ContainerStatus reports them: its binds, then its image volumes
 * (API 1.48), reported as the create request gave them, as containerd reports its config's.
 */
export function mountsFromInspect(inspect: ContainerInspect): Mount[] {
  const requested = (inspect.HostConfig?.Mounts ?? []) as readonly DockerMount[];
  // Which are recursively read-only, only the create request says (API 1.44 bind options).
  const recursive = new Set(requested.filter((m) => m.Type === 'bind' && m.BindOptions?.ReadOnlyForceRecursive === true).map((m) => m.Target));
  const binds = (inspect.Mounts ?? [])
    .filter((m) => m.Type === 'bind' || m.Type === undefined)
    .map((m): Mount => {
      const propagation: MountPropagation__Output =
        m.Propagation === 'rshared' || m.Propagation === 'shared'
          ? 'PROPAGATION_BIDIRECTIONAL'
          : m.Propagation === 'rslave' || m.Propagation === 'slave'
            ? 'PROPAGATION_HOST_TO_CONTAINER'
            : 'PROPAGATION_PRIVATE';
      return {
        containerPath: m.Destination,
        hostPath: m.Source,
        readonly: !m.RW,
        ...(recursive.has(m.Destination) ? { recursiveReadOnly: true } : {}),
        selinuxRelabel: /Z/.test(m.Mode ?? ''),
        propagation,
      };
    });
  const images = requested
    .filter((m): m is ImageMount => m.Type === 'image')
    .map((m): Mount => ({
      containerPath: m.Target,
      image: { image: m.Source },
      readonly: true,
      ...(m.ImageOptions?.Subpath ? { imageSubPath: m.ImageOptions.Subpath } : {}),
      propagation: 'PROPAGATION_PRIVATE',
    }));
  return [...binds, ...images];
}

/** The resources a container runs with, as ContainerStatus reports them. */
function resourcesFromInspect(inspect: ContainerInspect): ContainerResources {
  const hc = inspect.HostConfig;
  return {
    linux: {
      cpuPeriod: String(hc.CpuPeriod ?? 0),
      cpuQuota: String(hc.CpuQuota ?? 0),
      cpuShares: String(hc.CpuShares ?? 0),
      memoryLimitInBytes: String(hc.Memory ?? 0),
      memorySwapLimitInBytes: String(hc.MemorySwap ?? 0),
      oomScoreAdj: String(hc.OomScoreAdj ?? 0),
      cpusetCpus: hc.CpusetCpus ?? '',
      cpusetMems: hc.CpusetMems ?? '',
    },
  };
}
