// The Docker containers of one pod (labelled with its sandbox ID), stopped or removed together
// with the pod. Containers already gone are fine: a concurrent RemoveContainer may win.
import type { CallOptions, DockerClient } from '../../../docker/client';
import { DockerNotFoundError } from '../../../errors';
import type { ShimContext } from '../../context';
import { sideBySide } from '../../../util/side-by-side';

/**
 * What still runs of a pod's containers when the pod is stopped is killed at once: kubelet has
 * already given each container its grace period through StopContainer (containerd kills at
 * once too). Docker's stop with no grace sends SIGKILL right away and treats a stopped
 * container as done.
 */
const KILL_NOW_SECONDS = 0;

/**
 * The pause container is asked to stop as cri-dockerd asks it (its stop signal, 10 s before
 * SIGKILL): pause programs end on SIGTERM at once, and Docker's stop of a process that ends on
 * its signal costs less than its kill path (SIGTERM, a wait of 0 s timing out, then SIGKILL and
 * a second wait: ~9 ms more a pod here).
 */
export const PAUSE_STOP_GRACE_SECONDS = 10;

/** Docker's states in which a container still runs (those Docker's list without `all` shows). */
const RUNNING_STATUSES: ReadonlySet<string> = new Set(['running', 'paused', 'restarting']);

function ignoreGone(err: unknown): void {
  if (!(err instanceof DockerNotFoundError)) throw err;
}

/**
 * The pod's containers, or only those that still run: those CreateContainer labelled with its
 * sandbox ID (as dockershim's ListContainers filter found them), from the state cache once it
 * applied the shim's own calls, else from Docker's list (the store's rule): a container created
 * or started a moment ago is never missed, so never left running or behind.
 */
async function podContainerIds(objects: ShimContext['objects'], sandboxId: string, runningOnly: boolean, opts?: CallOptions): Promise<string[]> {
  const found = await objects.list({ kind: 'container', sandboxId }, opts);
  return found.filter((o) => !runningOnly || RUNNING_STATUSES.has(o.status)).map((o) => o.id);
}

/** Kills whatever of the pod still runs (see KILL_NOW_SECONDS). */
export async function killPodContainers(shim: Pick<ShimContext, 'dockerCached' | 'objects'>, sandboxId: string, opts?: CallOptions): Promise<void> {
  const ids = await podContainerIds(shim.objects, sandboxId, true, opts);
  await Promise.all(ids.map((id) => shim.dockerCached.stopContainer(id, KILL_NOW_SECONDS, opts).catch(ignoreGone)));
}

/** Stops the pod's pause container (see PAUSE_STOP_GRACE_SECONDS); one already gone is stopped. */
export async function stopPauseContainer(docker: DockerClient, id: string, opts?: CallOptions): Promise<void> {
  await docker.stopContainer(id, PAUSE_STOP_GRACE_SECONDS, opts).catch(ignoreGone);
}

/** Removes the pod's containers, ending their log followers first (as RemoveContainer does). */
export async function removePodContainers(
  shim: Pick<ShimContext, 'dockerCached' | 'logs' | 'objects'>,
  sandboxId: string,
  opts?: CallOptions,
): Promise<void> {
  const ids = await podContainerIds(shim.objects, sandboxId, false, opts);
  await Promise.all(ids.map((id) => removeContainerAndFollower(shim, id, opts).catch(ignoreGone)));
}

/**
 * Force-removes a container and ends its log follower side by side: the follower is told to
 * stop before the removal is asked for (forget's first step), and its last write and record
 * removal need not hold up Docker's. Settles once both did; the removal's failure is the one
 * reported.
 */
export function removeContainerAndFollower(shim: Pick<ShimContext, 'dockerCached' | 'logs'>, id: string, opts?: CallOptions): Promise<void> {
  const forgotten = shim.logs.forget(id);
  return sideBySide(shim.dockerCached.removeContainer(id, { force: true, removeVolumes: true }, opts), forgotten);
}

export async function killContainerIfPresent(docker: DockerClient, id: string, opts?: CallOptions): Promise<void> {
  await docker.stopContainer(id, KILL_NOW_SECONDS, opts).catch(ignoreGone);
}

export async function removeContainerIfPresent(docker: DockerClient, id: string, opts?: CallOptions): Promise<void> {
  await docker.removeContainer(id, { force: true, removeVolumes: true }, opts).catch(ignoreGone);
}
