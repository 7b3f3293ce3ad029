// ListContainers: the shim's containers, filtered by ID prefix, state,
// pod sandbox ID and label selector, all combined. Labels narrow Docker's own query; the
// rest is decided on CRI's view of each container, so the list agrees with ContainerStatus.
import type {
  CallContext,
  Container,
  ContainerFilter__Output,
  ListContainersRequest__Output,
  ListContainersResponse,
} from '../../cri/types';
import type { DockerFilters } from '../../docker/types';
import type { ShimContext } from '../context';
import { isFullId } from '../../conventions/ids';
import { CONTAINER_TYPE_LABEL, SANDBOX_ID_LABEL, TYPE_CONTAINER } from '../../conventions/labels';
import { containerFromSummary, matchesContainerFilter } from '../../status/container-convert';

export function dockerFiltersFor(filter: ContainerFilter__Output | null): DockerFilters {
  const label = [`${CONTAINER_TYPE_LABEL}=${TYPE_CONTAINER}`];
  if (filter?.podSandboxId && isFullId(filter.podSandboxId)) label.push(`${SANDBOX_ID_LABEL}=${filter.podSandboxId}`);
  for (const [k, v] of Object.entries(filter?.labelSelector ?? {})) label.push(`${k}=${v}`);
  return { label };
}

export async function findContainers(shim: ShimContext, filter: ContainerFilter__Output | null, { signal }: Pick<CallContext, 'signal'>): Promise<Container[]> {
  const found = await shim.docker.listContainers({ all: true, filters: dockerFiltersFor(filter) }, { signal });
  return found.map(containerFromSummary).filter((c) => matchesContainerFilter(c, filter));
}

export async function listContainers(shim: ShimContext, req: ListContainersRequest__Output, ctx: CallContext): Promise<ListContainersResponse> {
  return { containers: await findContainers(shim, req.filter, ctx) };
}

