// ListPodSandboxStats: two typed queries for the whole list (the pods, and the shim's
// containers grouped by pod; ../../object-store/shim-objects.ts, answered by the state cache from
// memory), then each pod's figures from cgroup files (../../stats/pod-stats.ts). Overlapping
// calls with the same filter share one collection (../../util/single-flight.ts), stopped when
// all their callers have given up.
import type {
  CallContext,
  ListPodSandboxStatsRequest__Output,
  ListPodSandboxStatsResponse,
  PodSandboxStats,
  PodSandboxStatsFilter__Output,
} from '../../cri/types';
import { groupBySandbox, objectQueryOf } from '../../object-store/shim-objects';
import type { ShimContext } from '../context';
import { podSandboxStatsOf } from '../../stats/pod-stats';
import { mapInSlices } from '../../stats/map-in-slices';

/** The pods' stats; calls with the same filter that overlap share one collection. */
export function collectPodStats(shim: ShimContext, filter: PodSandboxStatsFilter__Output | null, { signal }: Pick<CallContext, 'signal'>): Promise<PodSandboxStats[]> {
  return shim.sharedReads.run(`ListPodSandboxStats ${JSON.stringify(filter)}`, signal, (shared) => podStatsOf(shim, filter, shared));
}

async function podStatsOf(shim: ShimContext, filter: PodSandboxStatsFilter__Output | null, signal: AbortSignal): Promise<PodSandboxStats[]> {
  shim.stats.sweep();
  const [pauses, containers] = await Promise.all([
    shim.objects.list(objectQueryOf('sandbox', filter), { signal }),
    shim.objects.list({ kind: 'container' }, { signal }),
  ]);
  const bySandbox = groupBySandbox(containers);
  return mapInSlices(pauses, (p) => podSandboxStatsOf(shim.stats, p, bySandbox.get(p.id) ?? [], signal), signal);
}

export async function listPodSandboxStats(shim: ShimContext, req: ListPodSandboxStatsRequest__Output, ctx: CallContext): Promise<ListPodSandboxStatsResponse> {
  return { stats: await collectPodStats(shim, req.filter, ctx) };
}
