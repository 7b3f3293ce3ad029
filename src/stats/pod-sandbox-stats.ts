// PodSandboxStats, ListPodSandboxStats and StreamPodSandboxStats. Two Docker list calls for a
// whole list (pause containers, and the shim's containers grouped by their sandbox label);
// then cgroup files. A pod's CPU, memory and process figures are its own cgroup's when it has
// one (a cgroup parent, as kubelet always gives), else the sum of its pause container and its
// running containers; its network counters are those of the pause process's namespace.
import type {
  CallContext,
  ListPodSandboxStatsRequest__Output,
  ListPodSandboxStatsResponse,
  PodSandboxStats,
  PodSandboxStatsFilter__Output,
  PodSandboxStatsRequest__Output,
  PodSandboxStatsResponse,
  StreamPodSandboxStatsRequest__Output,
  StreamPodSandboxStatsResponse,
} from '../cri/types';
import type { ContainerSummary, DockerFilters } from '../docker/types';
import type { ShimContext } from '../shim/context';
import { CONTAINER_TYPE_LABEL, fromDockerLabels, matchesLabelSelector, SANDBOX_ID_LABEL, TYPE_CONTAINER, TYPE_SANDBOX } from '../shim/labels';
import { resolveShimObject } from '../shim/resolve';
import { sandboxFromSummary } from '../shim/sandbox/convert';
import { nowNanos } from '../util/time';
import type { CgroupSample } from './cgroup-sample';
import { statsCollector } from './collector';
import { sendInBatches } from '../shim/stream-batches';
import { cpuUsage, memoryUsage, sumSamples, u64 } from './convert';

export const POD_STATS_STREAM_BATCH = 100;

export function matchesPodStatsFilter(c: ContainerSummary, filter: PodSandboxStatsFilter__Output | null): boolean {
  if (!filter) return true;
  if (filter.id !== '' && !c.Id.startsWith(filter.id)) return false;
  return matchesLabelSelector(fromDockerLabels(c.Labels).labels, filter.labelSelector);
}

async function podStats(shim: ShimContext, pause: ContainerSummary, members: readonly ContainerSummary[], signal: AbortSignal): Promise<PodSandboxStats> {
  const collector = statsCollector(shim);
  const [own, figures] = await Promise.all([
    collector.sandboxFigures(pause, signal),
    Promise.all(members.map((c) => collector.containerFigures(c, signal))),
  ]);
  const present = figures.filter((f): f is NonNullable<typeof f> => f !== undefined);
  const samples = [own.sample, ...present.map((f) => f.sample)].filter((s): s is CgroupSample => s !== undefined);
  const total = own.sample ? (own.podSample ?? sumSamples(samples)) : undefined;
  const timestamp = nowNanos();
  const key = `pod:${pause.Id}`;
  const nanoCores = total?.cpuUsageNs === undefined ? undefined : collector.rates.rate(key, total.cpuUsageNs, process.hrtime.bigint());
  if (!total) collector.rates.forget(key);
  const { id, metadata, labels, annotations } = sandboxFromSummary(pause, undefined);
  const linux: NonNullable<PodSandboxStats['linux']> = {
    cpu: cpuUsage(total, nanoCores, timestamp),
    memory: memoryUsage(total, timestamp),
    process: { timestamp, processCount: u64(total?.processCount ?? 0n) },
    containers: present.map((f) => f.stats),
  };
  if (own.network) linux.network = own.network;
  return { attributes: { id, metadata, labels, annotations }, linux };
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

export async function collectPodStats(shim: ShimContext, filter: PodSandboxStatsFilter__Output | null, signal: AbortSignal): Promise<PodSandboxStats[]> {
  statsCollector(shim).sweep();
  const sandboxFilters: DockerFilters = { label: [`${CONTAINER_TYPE_LABEL}=${TYPE_SANDBOX}`] };
  for (const [k, v] of Object.entries(filter?.labelSelector ?? {})) sandboxFilters.label!.push(`${k}=${v}`);
  const [pauses, containers] = await Promise.all([
    shim.docker.listContainers({ all: true, filters: sandboxFilters }, { signal }),
    shim.docker.listContainers({ all: true, filters: { label: [`${CONTAINER_TYPE_LABEL}=${TYPE_CONTAINER}`] } }, { signal }),
  ]);
  const bySandbox = groupBySandbox(containers);
  return Promise.all(
    pauses.filter((p) => matchesPodStatsFilter(p, filter)).map((p) => podStats(shim, p, bySandbox.get(p.Id) ?? [], signal)),
  );
}

export async function podSandboxStats(shim: ShimContext, req: PodSandboxStatsRequest__Output, ctx: CallContext): Promise<PodSandboxStatsResponse> {
  const pause = await resolveShimObject(shim.docker, 'sandbox', 'pod_sandbox_id', req.podSandboxId, { signal: ctx.signal });
  const members = await shim.docker.listContainers(
    { all: true, filters: { label: [`${CONTAINER_TYPE_LABEL}=${TYPE_CONTAINER}`, `${SANDBOX_ID_LABEL}=${pause.Id}`] } },
    { signal: ctx.signal },
  );
  return { stats: await podStats(shim, pause, members, ctx.signal) };
}

export async function listPodSandboxStats(shim: ShimContext, req: ListPodSandboxStatsRequest__Output, ctx: CallContext): Promise<ListPodSandboxStatsResponse> {
  return { stats: await collectPodStats(shim, req.filter, ctx.signal) };
}

export async function streamPodSandboxStats(
  shim: ShimContext,
  req: StreamPodSandboxStatsRequest__Output,
  send: (res: StreamPodSandboxStatsResponse) => void,
  ctx: CallContext,
): Promise<void> {
  const all = await collectPodStats(shim, req.filter, ctx.signal);
  sendInBatches(all, POD_STATS_STREAM_BATCH, (podSandboxStats) => send({ podSandboxStats }));
}

