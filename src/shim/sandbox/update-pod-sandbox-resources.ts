// UpdatePodSandboxResources: apply the pod's new resources to its pause container, as far as
// Docker's update call can. What it cannot apply (hugepage limits, cgroup v2 "unified" keys,
// oom_score_adj of a running container) is refused as UNIMPLEMENTED before anything changes,
// naming the fields; kubelet treats UNIMPLEMENTED here as "runtime does not do this".
// The overhead is checked but not applied: kubelet already sizes the pod cgroup to include it.
import type { CallContext, UpdatePodSandboxResourcesRequest__Output, UpdatePodSandboxResourcesResponse } from '../../cri/types';
import { FailedPreconditionError, NotFoundError, UnimplementedError } from '../../errors';
import type { ShimContext } from '../context';
import { findSandbox } from './support/lookup';
import { checkResources } from '../../translate/to-docker/linux-resources';
import { quote } from '../../util/quote';

export async function updatePodSandboxResources(
  shim: ShimContext,
  req: UpdatePodSandboxResourcesRequest__Output,
  ctx: CallContext,
): Promise<UpdatePodSandboxResourcesResponse> {
  const resources = req.resources ? checkResources('resources', req.resources) : undefined;
  if (req.overhead) checkResources('overhead', req.overhead);
  const found = await findSandbox(shim, 'pod_sandbox_id', req.podSandboxId, { signal: ctx.signal });
  if (!found) throw new NotFoundError(`pod sandbox ${quote(req.podSandboxId)} not found`);
  if (!resources) return {};
  const unsupported = resources.unsupported.map((f) => `resources.${f}`);
  if (resources.oomScoreAdj !== 0) unsupported.push('resources.oom_score_adj');
  if (unsupported.length > 0) {
    throw new UnimplementedError(`Docker cannot update ${unsupported.join(', ')} of a running container; nothing was changed`);
  }
  if (!found.container) throw new FailedPreconditionError(`pod sandbox ${found.id} has no pause container any more`);
  if (Object.keys(resources.docker).length === 0) return {};
  await shim.sandboxLocks.run(found.id, () => shim.dockerCached.updateContainer(found.id, resources.docker, { signal: ctx.signal }));
  return {};
}
