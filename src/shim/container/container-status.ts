// ContainerStatus: Docker's inspect assembled as CRI's ContainerStatus (../../status/assemble-status.ts,
// which GetContainerEvents uses too), with dockershim's verbose info.
import type { CallContext, ContainerStatusRequest__Output, ContainerStatusResponse } from '../../cri/types';
import type { ShimContext } from '../context';
import { SANDBOX_ID_LABEL } from '../../conventions/labels';
import { bareDockerName } from '../../conventions/naming';
import { inspectShimContainer } from '../support/resolve';
import { assembleContainerStatus } from '../../status/assemble-status';

export async function containerStatus(
  shim: ShimContext,
  req: ContainerStatusRequest__Output,
  ctx: CallContext,
): Promise<ContainerStatusResponse> {
  const opts = { signal: ctx.signal };
  const inspect = await inspectShimContainer(shim, req.containerId, opts);
  const status = await assembleContainerStatus(shim, inspect, opts);
  const response: ContainerStatusResponse = { status };
  if (req.verbose) {
    response.info = {
      info: JSON.stringify({
        pid: inspect.State.Pid,
        sandboxID: inspect.Config.Labels?.[SANDBOX_ID_LABEL] ?? '',
        dockerName: bareDockerName(inspect.Name),
        privileged: inspect.HostConfig.Privileged === true,
      }),
    };
  }
  return response;
}
