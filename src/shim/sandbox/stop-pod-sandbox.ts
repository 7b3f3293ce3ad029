// StopPodSandbox: tear down the pod's network, kill what still runs of its containers, then its
// pause container.
// Idempotent: a sandbox already stopped, or already removed, is success.
import type { CallContext, StopPodSandboxRequest__Output, StopPodSandboxResponse } from '../../cri/types';
import type { ShimContext } from '../context';
import { mayNameShimObject } from '../../conventions/ids';
import { findSandbox, networkFacts, networkTarget } from './lookup';
import { killContainerIfPresent, killPodContainers } from './pod-containers';

export async function stopPodSandbox(shim: ShimContext, req: StopPodSandboxRequest__Output, ctx: CallContext): Promise<StopPodSandboxResponse> {
  if (!mayNameShimObject('pod_sandbox_id', req.podSandboxId)) return {};
  const opts = { signal: ctx.signal };
  const found = await findSandbox(shim, 'pod_sandbox_id', req.podSandboxId, opts);
  if (!found) return {};
  await shim.sandboxLocks.run(found.id, async () => {
    await shim.network.tearDownPod(networkTarget(found), networkFacts(found));
    await killPodContainers(shim.docker, found.id, opts);
    if (found.container) await killContainerIfPresent(shim.docker, found.id, opts);
  });
  return {};
}
