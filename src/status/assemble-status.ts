// ContainerStatus and PodSandboxStatus as the shim reports them, assembled in one place for
// the status RPCs and for GetContainerEvents: the pure converters (translate/to-cri/container-convert.ts
// and sandbox-convert.ts) plus the few facts that need a look elsewhere (the image's identity,
// the process's user, the pod's IPs, the log follower having caught up).
import * as fs from 'node:fs';
import type { SandboxCheckpoint } from '../checkpoint/checkpoint';
import type { ContainerStatus, ContainerUser, PodSandboxStatus } from '../cri/types';
import type { CallOptions, DockerClient } from '../docker/client';
import type { OomKills } from '../docker-cache/container-documents';
import type { ContainerInspect } from '../docker/types';
import { DockerNotFoundError } from '../errors';
import type { ContainerLogManager } from '../logs/log-manager';
import type { NetworkManager } from '../network/network-manager';
import type { Logger } from '../util/logger';
import { containerStatusFromInspect, SIGKILL_EXIT_CODE, userFromProcStatus, type ImageIdentity } from '../translate/to-cri/container-convert';
import { podRefOf, statusFromCheckpoint, statusFromInspect, usesHostNetwork } from '../translate/to-cri/sandbox-convert';

/** What status assembly reads besides the documents it is given. */
export interface StatusSources {
  readonly dockerCached: DockerClient;
  readonly logs: Pick<ContainerLogManager, 'drained'>;
  readonly network: Pick<NetworkManager, 'podIps'>;
  readonly log: Logger;
  /** The OOM kills Docker's events reported, which its documents can miss (see ../../docker-cache). */
  readonly oomKills: OomKills;
}

/** How long a status waits for a stopped container's last output to reach its file. */
const LOG_DRAIN_WAIT_MS = 5_000;

/**
 * A container's status. For a stopped container it first waits until its log follower has
 * written all its output, so whoever reads the log after seeing EXITED sees all of it.
 */
export async function assembleContainerStatus(src: StatusSources, inspect: ContainerInspect, opts: CallOptions = {}): Promise<ContainerStatus> {
  if (!inspect.State.Running && !(await src.logs.drained(inspect.Id, LOG_DRAIN_WAIT_MS))) {
    src.log.warn({ containerId: inspect.Id }, 'stopped container: its log is not fully written yet');
  }
  // The witnesses beyond Docker's document are asked only of a run that ended by SIGKILL
  // without Docker's flag (the kernel log's costs a read).
  const s = inspect.State;
  const witness = { oomKilled: !s.Running && s.ExitCode === SIGKILL_EXIT_CODE && !s.OOMKilled && src.oomKills.oomKilledIn(inspect.Id, s.StartedAt) };
  return containerStatusFromInspect(inspect, await imageIdentity(src.dockerCached, inspect, opts), processUser(inspect), witness);
}

export async function imageIdentity(docker: DockerClient, inspect: ContainerInspect, opts: CallOptions): Promise<ImageIdentity> {
  try {
    const image = await docker.inspectImage(inspect.Image, opts);
    return { id: image.Id, ref: image.RepoDigests?.[0] ?? image.Id, labels: image.Config?.Labels ?? {} };
  } catch (err) {
    // The image may have been removed since; the container still knows its ID.
    if (err instanceof DockerNotFoundError) return { id: inspect.Image, ref: inspect.Image };
    throw err;
  }
}

/** Who the container's main process runs as; only knowable while it runs. */
function processUser(inspect: ContainerInspect): ContainerUser | undefined {
  if (!inspect.State.Running || !(inspect.State.Pid > 0)) return undefined;
  try {
    return userFromProcStatus(fs.readFileSync(`/proc/${inspect.State.Pid}/status`, 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * A sandbox's status from its pause container's document (when Docker still has it) and its
 * checkpoint; undefined when there is neither. `removed` marks the last document of a pause
 * container just removed: NOTREADY, with no IPs.
 */
export async function assembleSandboxStatus(
  src: StatusSources,
  doc: ContainerInspect | undefined,
  checkpoint: SandboxCheckpoint | undefined,
  removed = false,
): Promise<PodSandboxStatus | undefined> {
  if (!doc) return checkpoint ? statusFromCheckpoint(checkpoint) : undefined;
  if (removed) return { ...statusFromInspect(doc, checkpoint, []), state: 'SANDBOX_NOTREADY' };
  const facts = { hostNetwork: usesHostNetwork(doc.HostConfig.NetworkMode, checkpoint) };
  const ips = doc.State.Running ? await src.network.podIps(podRefOf(doc.Id, doc.Name, doc.Config.Labels, checkpoint), facts) : [];
  return statusFromInspect(doc, checkpoint, ips);
}
