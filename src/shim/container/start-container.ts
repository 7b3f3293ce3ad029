// StartContainer: start the Docker container and its CRI log follower.
import type { CallContext, StartContainerRequest__Output, StartContainerResponse } from '../../cri/types';
import type { ShimContext } from '../context';
import { CONTAINER_LOG_PATH_LABEL } from '../../conventions/labels';
import { resolveShimObject } from '../resolve';

export async function startContainer(shim: ShimContext, req: StartContainerRequest__Output, ctx: CallContext): Promise<StartContainerResponse> {
  const opts = { signal: ctx.signal };
  const { Id } = await resolveShimObject(shim.docker, 'container', 'container_id', req.containerId, opts);
  await shim.docker.startContainer(Id, opts);
  const inspect = await shim.docker.inspectContainer(Id, opts);
  const logPath = inspect.Config.Labels?.[CONTAINER_LOG_PATH_LABEL] ?? '';
  // Docker keeps the output from the first byte, so following after the start loses nothing.
  if (logPath !== '') shim.logs.follow(Id, logPath, inspect.Config.Tty === true);
  return {};
}
