// ListPodSandboxStats: two Docker list calls for the whole list (pause containers, and the
// shim's containers grouped by their sandbox label), then each pod's figures from cgroup files
// (../../stats/pod-stats.ts). Overlapping calls with the same filter share one collection
// (../../util/single-flight.ts), stopped when all their callers have given up.
import type {
  CallContext,
  ListPodSandboxStatsRequest__Output,
  ListPodSandboxStatsResponse,
  PodSandboxStats,
  PodSandboxStatsFilter__Output,
} from '../../cri/types';
import type { ContainerSummary, DockerFilters } from '../../docker/types';
import type { ShimContext } from '../context';
import { CONTAINER_TYPE_LABEL, fromDockerLabels, matchesLabelSelector, SANDBOX_ID_LABEL, TYPE_CONTAINER, TYPE_SANDBOX } from '../../conventions/labels';
import { podSandboxStatsOf } from '../../stats/pod-stats';
import { mapInSlices } from '../../stats/slices';

export function matchesPodStatsFilter(c: ContainerSummary, filter: PodSandboxStatsFilter__Output | null): boolean {
  if (!filter) return true;
  if (filter.id !== '' && !c.Id.startsWith(filter.id)) return false;
  return matchesLabelSelector(fromDockerLabels(c.Labels).labels, filter.labelSelector);
}

function groupBySandbox(containers: readonly ContainerSummary[]): Map<string, ContainerSummary[]> {
  const out = new Map<string, ContainerSummary[]>();
  for (const c of containers) {
    const sandbox = c.Labels?.[SANDBOX_ID_LABEL];
    if (!sandbox) continue;
    const list = out.get(sandbox) ?? [];
    list.push(c);
    out.set(sandbox, list);
  }
  return out;
}

/** The pods' stats; calls with the same filter that overlap share one collection. */
export function collectPodStats(shim: ShimContext, filter: PodSandboxStatsFilter__Output | null, { signal }: Pick<CallContext, 'signal'>): Promise<PodSandboxStats[]> {
  return shim.sharedReads.run(`ListPodSandboxStats ${JSON.stringify(filter)}`, signal, (shared) => podStatsOf(shim, filter, shared));
}

async function podStatsOf(shim: ShimContext, filter: PodSandboxStatsFilter__Output | null, signal: AbortSignal): Promise<PodSandboxStats[]> {
  shim.stats.sweep();
  const sandboxFilters: DockerFilters = { label: [`${CONTAINER_TYPE_LABEL}=${TYPE_SANDBOX}`] };
  for (const [k, v] of Object.entries(filter?.labelSelector ?? {})) sandboxFilters.label!.push(`${k}=${v}`);
  const [pauses, containers] = await Promise.all([
    shim.docker.listContainers({ all: true, filters: sandboxFilters }, { signal }),
    shim.docker.listContainers({ all: true, filters: { label: [`${CONTAINER_TYPE_LABEL}=${TYPE_CONTAINER}`] } }, { signal }),
  ]);
  const bySandbox = groupBySandbox(containers);
  return mapInSlices(
    pauses.filter((p) => matchesPodStatsFilter(p, filter)),
    (p) => podSandboxStatsOf(shim.stats, p, bySandbox.get(p.Id) ?? [], signal),
    signal,
  );
}

export async function listPodSandboxStats(shim: ShimContext, req: ListPodSandboxStatsRequest__Output, ctx: CallContext): Promise<ListPodSandboxStatsResponse> {
  return { stats: await collectPodStats(shim, req.filter, ctx) };
}

