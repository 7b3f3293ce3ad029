// ListPodSandbox and StreamPodSandboxes: every sandbox this shim made, from Docker's pause
// containers plus checkpoints whose container is gone (NOTREADY, so kubelet removes them),
// filtered by ID prefix, state and label selector together.
import type {
  CallContext,
  ListPodSandboxRequest__Output,
  ListPodSandboxResponse,
  PodSandbox,
  PodSandboxFilter__Output,
  StreamPodSandboxesRequest__Output,
  StreamPodSandboxesResponse,
} from '../../cri/types';
import type { DockerFilters } from '../../docker/types';
import type { ShimContext } from '../context';
import { CONTAINER_TYPE_LABEL, TYPE_SANDBOX } from '../labels';
import { matchesSandboxFilter, sandboxFromCheckpoint, sandboxFromSummary } from './convert';
import { sandboxState } from './state';
import { sendInBatches } from '../stream-batches';

/** Sandboxes per StreamPodSandboxes message: well under gRPC's default 4 MiB message limit. */
export const STREAM_BATCH_SIZE = 200;

export async function listSandboxes(shim: ShimContext, filter: PodSandboxFilter__Output | null, signal: AbortSignal): Promise<PodSandbox[]> {
  const dockerFilters: DockerFilters = { label: [`${CONTAINER_TYPE_LABEL}=${TYPE_SANDBOX}`] };
  if (filter?.id) dockerFilters.id = [filter.id];
  const [containers, checkpoints] = await Promise.all([
    shim.docker.listContainers({ all: true, filters: dockerFilters }, { signal }),
    sandboxState(shim).checkpoints.readAll(),
  ]);
  const byId = new Map(checkpoints.map((c) => [c.id, c]));
  const sandboxes = containers.map((c) => sandboxFromSummary(c, byId.get(c.Id)));
  const listed = new Set(containers.map((c) => c.Id));
  for (const c of checkpoints) if (!listed.has(c.id)) sandboxes.push(sandboxFromCheckpoint(c));
  return sandboxes.filter((s) => matchesSandboxFilter(s, filter));
}

export async function listPodSandbox(shim: ShimContext, req: ListPodSandboxRequest__Output, ctx: CallContext): Promise<ListPodSandboxResponse> {
  return { items: await listSandboxes(shim, req.filter, ctx.signal) };
}

export async function streamPodSandboxes(
  shim: ShimContext,
  req: StreamPodSandboxesRequest__Output,
  send: (res: StreamPodSandboxesResponse) => void,
  ctx: CallContext,
): Promise<void> {
  const all = await listSandboxes(shim, req.filter, ctx.signal);
  sendInBatches(all, STREAM_BATCH_SIZE, (podSandboxes) => send({ podSandboxes }));
}
