// The Docker containers of one pod (labelled with its sandbox ID), stopped or removed together
// with the pod. Containers already gone are fine: a concurrent RemoveContainer may win.
import type { CallOptions, DockerClient } from '../../docker/client';
import { DockerNotFoundError } from '../../errors';
import type { ShimContext } from '../context';
import { SANDBOX_ID_LABEL } from '../../conventions/labels';
import { sideBySide } from '../../util/side-by-side';

/**
 * What still runs when the pod is stopped is killed at once: kubelet has already given each
 * container its grace period through StopContainer (containerd kills at once too). Docker's
 * stop with no grace sends SIGKILL right away and treats a stopped container as done.
 */
const KILL_NOW_SECONDS = 0;

function ignoreGone(err: unknown): void {
  if (!(err instanceof DockerNotFoundError)) throw err;
}

async function podContainerIds(docker: DockerClient, sandboxId: string, all: boolean, opts?: CallOptions): Promise<string[]> {
  const found = await docker.listContainers({ all, filters: { label: [`${SANDBOX_ID_LABEL}=${sandboxId}`] } }, opts);
  // The pause container itself never carries the label; guard anyway so it is stopped last.
  return found.map((c) => c.Id).filter((id) => id !== sandboxId);
}

/** Kills whatever of the pod still runs (see KILL_NOW_SECONDS). */
export async function killPodContainers(docker: DockerClient, sandboxId: string, opts?: CallOptions): Promise<void> {
  const ids = await podContainerIds(docker, sandboxId, false, opts);
  await Promise.all(ids.map((id) => docker.stopContainer(id, KILL_NOW_SECONDS, opts).catch(ignoreGone)));
}

/** Removes the pod's containers, ending their log followers first (as RemoveContainer does). */
export async function removePodContainers(
  shim: Pick<ShimContext, 'docker' | 'logs'>,
  sandboxId: string,
  opts?: CallOptions,
): Promise<void> {
  const ids = await podContainerIds(shim.docker, sandboxId, true, opts);
  await Promise.all(ids.map((id) => removeContainerAndFollower(shim, id, opts).catch(ignoreGone)));
}

/**
 * Force-removes a container and ends its log follower side by side: the follower is told to
 * stop before the removal is asked for (forget's first step), and its last write and record
 * removal need not hold up Docker's. Settles once both did; the removal's failure is the one
 * reported.
 */
export function removeContainerAndFollower(shim: Pick<ShimContext, 'docker' | 'logs'>, id: string, opts?: CallOptions): Promise<void> {
  const forgotten = shim.logs.forget(id);
  return sideBySide(shim.docker.removeContainer(id, { force: true, removeVolumes: true }, opts), forgotten);
}

export async function killContainerIfPresent(docker: DockerClient, id: string, opts?: CallOptions): Promise<void> {
  await docker.stopContainer(id, KILL_NOW_SECONDS, opts).catch(ignoreGone);
}

export async function removeContainerIfPresent(docker: DockerClient, id: string, opts?: CallOptions): Promise<void> {
  await docker.removeContainer(id, { force: true, removeVolumes: true }, opts).catch(ignoreGone);
}
