// RemovePodSandbox: remove the pod's containers, its pause container and its checkpoint, side by side.
// A sandbox that is already gone is success. A running one is torn down first (kubelet
// normally stops it before, but CRI says running containers are removed by force).
import type { CallContext, RemovePodSandboxRequest__Output, RemovePodSandboxResponse } from '../../cri/types';
import type { ShimContext } from '../context';
import { mayNameShimObject } from '../../conventions/ids';
import { findSandbox, networkFacts, networkTarget } from './support/lookup';
import { removeContainerIfPresent, removePodContainers } from './support/pod-containers';
import { sideBySide } from '../../util/side-by-side';

export async function removePodSandbox(
  shim: ShimContext,
  req: RemovePodSandboxRequest__Output,
  ctx: CallContext,
): Promise<RemovePodSandboxResponse> {
  if (!mayNameShimObject('pod_sandbox_id', req.podSandboxId)) return {};
  const opts = { signal: ctx.signal };
  const found = await findSandbox(shim, 'pod_sandbox_id', req.podSandboxId, opts);
  if (!found) return {};
  const { sandboxLocks: locks, checkpoints } = shim;
  await locks.run(found.id, async () => {
    // Releasing the network again is harmless, and needed when StopPodSandbox never ran.
    await shim.network.tearDownPod(networkTarget(found), networkFacts(found));
    // Everything goes, so no order is needed: the pod's containers (kubelet normally removed
    // them already), the pause container and the checkpoint are removed side by side. The
    // checkpoint goes even when a removal fails, as dockershim's does (the pause container,
    // with its labels, still names the pod for the next call).
    await sideBySide(
      removePodContainers(shim, found.id, opts),
      found.container ? removeContainerIfPresent(shim.dockerCached, found.id, opts) : Promise.resolve(),
      checkpoints.remove(found.id),
    );
  });
  return {};
}
