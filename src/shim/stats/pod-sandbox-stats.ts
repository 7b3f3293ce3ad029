// PodSandboxStats: the pod's pause container and its containers (typed queries,
// ../../object-store/shim-objects.ts), then their cgroup files (../../stats/pod-stats.ts).
// Overlapping calls for the same pod share one read (../../util/single-flight.ts).
import type { CallContext, PodSandboxStatsRequest__Output, PodSandboxStatsResponse } from '../../cri/types';
import { podSandboxStatsOf } from '../../stats/pod-stats';
import type { ShimContext } from '../context';
import { resolveShimObject } from '../support/resolve';

export function podSandboxStats(shim: ShimContext, req: PodSandboxStatsRequest__Output, ctx: CallContext): Promise<PodSandboxStatsResponse> {
  return shim.sharedReads.run(`PodSandboxStats ${req.podSandboxId}`, ctx.signal, (signal) => statsOf(shim, req.podSandboxId, signal));
}

async function statsOf(shim: ShimContext, podSandboxId: string, signal: AbortSignal): Promise<PodSandboxStatsResponse> {
  const pause = await resolveShimObject(shim, 'sandbox', 'pod_sandbox_id', podSandboxId, { signal });
  const members = await shim.objects.list({ kind: 'container', sandboxId: pause.id }, { signal });
  return { stats: await podSandboxStatsOf(shim.stats, pause, members, signal) };
}
