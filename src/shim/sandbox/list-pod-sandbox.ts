// ListPodSandbox: every sandbox this shim made, from Docker's pause
// containers plus checkpoints whose container is gone (NOTREADY, so kubelet removes them),
// filtered by ID prefix, state and label selector together.
import type {
  CallContext,
  ListPodSandboxRequest__Output,
  ListPodSandboxResponse,
  PodSandbox,
  PodSandboxFilter__Output,
} from '../../cri/types';
import type { DockerFilters } from '../../docker/types';
import type { ShimContext } from '../context';
import { CONTAINER_TYPE_LABEL, TYPE_SANDBOX } from '../../conventions/labels';
import { matchesSandboxFilter, sandboxFromCheckpoint, sandboxFromSummary } from '../../status/sandbox-convert';

export async function listSandboxes(shim: ShimContext, filter: PodSandboxFilter__Output | null, { signal }: Pick<CallContext, 'signal'>): Promise<PodSandbox[]> {
  const dockerFilters: DockerFilters = { label: [`${CONTAINER_TYPE_LABEL}=${TYPE_SANDBOX}`] };
  if (filter?.id) dockerFilters.id = [filter.id];
  const [containers, checkpoints] = await Promise.all([
    shim.docker.listContainers({ all: true, filters: dockerFilters }, { signal }),
    shim.checkpoints.readAll(),
  ]);
  const byId = new Map(checkpoints.map((c) => [c.id, c]));
  const sandboxes = containers.map((c) => sandboxFromSummary(c, byId.get(c.Id)));
  const listed = new Set(containers.map((c) => c.Id));
  for (const c of checkpoints) if (!listed.has(c.id)) sandboxes.push(sandboxFromCheckpoint(c));
  return sandboxes.filter((s) => matchesSandboxFilter(s, filter));
}

export async function listPodSandbox(shim: ShimContext, req: ListPodSandboxRequest__Output, ctx: CallContext): Promise<ListPodSandboxResponse> {
  return { items: await listSandboxes(shim, req.filter, ctx) };
}

