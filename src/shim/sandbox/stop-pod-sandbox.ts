// StopPodSandbox: kill what still runs of the pod's containers, tear down the pod's network,
// then stop its pause container.
// Idempotent: a sandbox already stopped, or already removed, is success.
// The containers go first, as containerd stops them first: a plugin that hangs (the teardown
// waits up to the plugin timeout, 60 s per plugin) must not keep the pod's workload running. The
// pause container goes after the teardown: with Docker the pod's network namespace is the pause
// process's, and the plugins need it to remove the pod's interfaces themselves (containerd keeps
// its namespace pinned, so it can tear down after; cri-dockerd too tears down before it stops the
// pause container).
// A teardown that fails (a CNI plugin uninstalled, IPAM down) does not keep the pod running: the
// pause container is stopped all the same, the pod reads NOTREADY, and the call fails with the
// teardown's error so that kubelet calls again; that call's teardown, with the pause process
// gone, passes the plugins the results cached at ADD (what a DEL needs), as Remove does.
import type { CallContext, StopPodSandboxRequest__Output, StopPodSandboxResponse } from '../../cri/types';
import type { ShimContext } from '../context';
import { mayNameShimObject } from '../../conventions/ids';
import { errorMessage } from '../../errors';
import { findSandbox, networkFacts, networkTarget } from './support/lookup';
import { killPodContainers, stopPauseContainer } from './support/pod-containers';

export async function stopPodSandbox(shim: ShimContext, req: StopPodSandboxRequest__Output, ctx: CallContext): Promise<StopPodSandboxResponse> {
  if (!mayNameShimObject('pod_sandbox_id', req.podSandboxId)) return {};
  const opts = { signal: ctx.signal };
  const found = await findSandbox(shim, 'pod_sandbox_id', req.podSandboxId, opts);
  if (!found) return {};
  await shim.sandboxLocks.run(found.id, async () => {
    await killPodContainers(shim, found.id, opts);
    // While the pause process still holds the namespace, so the plugins can remove the pod's
    // interfaces themselves.
    const teardown = await shim.network.tearDownPod(networkTarget(found), networkFacts(found)).then(
      () => undefined,
      (err: unknown) => ({ err }),
    );
    if (teardown) shim.log.warn({ sandboxId: found.id, error: errorMessage(teardown.err) }, 'pod network teardown failed; stopping the pod anyway, the next StopPodSandbox tries again');
    if (found.container) await stopPauseContainer(shim.dockerCached, found.id, opts);
    if (teardown) throw teardown.err;
  });
  return {};
}
