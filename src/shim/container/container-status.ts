// ContainerStatus: Docker's inspect, the image it runs, and (while it runs) the identity of its
// process, as CRI's ContainerStatus. A stopped container's status waits until its follower
// has written all its output, so whoever reads the log after seeing EXITED sees all of it.
import * as fs from 'node:fs';
import type { CallContext, ContainerStatusRequest__Output, ContainerStatusResponse, ContainerUser } from '../../cri/types';
import type { CallOptions, DockerClient } from '../../docker/client';
import type { ContainerInspect } from '../../docker/types';
import { DockerNotFoundError } from '../../errors';
import type { ShimContext } from '../context';
import { SANDBOX_ID_LABEL } from '../labels';
import { resolveShimObject } from '../resolve';
import { containerStatusFromInspect, userFromProcStatus, type ImageIdentity } from './status-convert';

/** How long a status call waits for a stopped container's last output to reach its file. */
export const LOG_DRAIN_WAIT_MS = 5_000;

export async function containerStatus(
  shim: ShimContext,
  req: ContainerStatusRequest__Output,
  ctx: CallContext,
): Promise<ContainerStatusResponse> {
  const opts = { signal: ctx.signal };
  const { Id } = await resolveShimObject(shim.docker, 'container', 'container_id', req.containerId, opts);
  const inspect = await shim.docker.inspectContainer(Id, opts);
  if (!inspect.State.Running && !(await shim.logs.drained(Id, LOG_DRAIN_WAIT_MS))) {
    shim.log.warn({ containerId: Id }, 'stopped container: its log is not fully written yet');
  }
  const image = await imageIdentity(shim.docker, inspect, opts);
  const status = containerStatusFromInspect(inspect, image, processUser(inspect));
  const response: ContainerStatusResponse = { status };
  if (req.verbose) {
    response.info = {
      info: JSON.stringify({
        pid: inspect.State.Pid,
        sandboxID: inspect.Config.Labels?.[SANDBOX_ID_LABEL] ?? '',
        dockerName: inspect.Name.replace(/^\//, ''),
        privileged: inspect.HostConfig.Privileged === true,
      }),
    };
  }
  return response;
}

export async function imageIdentity(docker: DockerClient, inspect: ContainerInspect, opts: CallOptions): Promise<ImageIdentity> {
  try {
    const image = await docker.inspectImage(inspect.Image, opts);
    return { id: image.Id, ref: image.RepoDigests?.[0] ?? image.Id };
  } catch (err) {
    // The image may have been removed since; the container still knows its ID.
    if (err instanceof DockerNotFoundError) return { id: inspect.Image, ref: inspect.Image };
    throw err;
  }
}

/** Who the container's main process runs as; only knowable while it runs. */
export function processUser(inspect: ContainerInspect): ContainerUser | undefined {
  if (!inspect.State.Running || !(inspect.State.Pid > 0)) return undefined;
  try {
    return userFromProcStatus(fs.readFileSync(`/proc/${inspect.State.Pid}/status`, 'utf8'));
  } catch {
    return undefined;
  }
}
