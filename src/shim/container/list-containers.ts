// ListContainers and StreamContainers: the shim's containers, filtered by ID prefix, state,
// pod sandbox ID and label selector, all combined. Labels narrow Docker's own query; the
// rest is decided on CRI's view of each container, so both RPCs agree with ContainerStatus.
import type {
  CallContext,
  Container,
  ContainerFilter__Output,
  ListContainersRequest__Output,
  ListContainersResponse,
  StreamContainersRequest__Output,
  StreamContainersResponse,
} from '../../cri/types';
import type { DockerFilters } from '../../docker/types';
import type { ShimContext } from '../context';
import { CONTAINER_TYPE_LABEL, SANDBOX_ID_LABEL, TYPE_CONTAINER } from '../labels';
import { containerFromSummary, matchesContainerFilter } from './status-convert';
import { sendInBatches } from '../stream-batches';

/** Containers per StreamContainers message. */
const STREAM_BATCH = 500;

export function dockerFiltersFor(filter: ContainerFilter__Output | null): DockerFilters {
  const label = [`${CONTAINER_TYPE_LABEL}=${TYPE_CONTAINER}`];
  if (filter?.podSandboxId && filter.podSandboxId.length === 64) label.push(`${SANDBOX_ID_LABEL}=${filter.podSandboxId}`);
  for (const [k, v] of Object.entries(filter?.labelSelector ?? {})) label.push(`${k}=${v}`);
  return { label };
}

export async function findContainers(shim: ShimContext, filter: ContainerFilter__Output | null, signal: AbortSignal): Promise<Container[]> {
  const found = await shim.docker.listContainers({ all: true, filters: dockerFiltersFor(filter) }, { signal });
  return found.map(containerFromSummary).filter((c) => matchesContainerFilter(c, filter));
}

export async function listContainers(shim: ShimContext, req: ListContainersRequest__Output, ctx: CallContext): Promise<ListContainersResponse> {
  return { containers: await findContainers(shim, req.filter, ctx.signal) };
}

export async function streamContainers(
  shim: ShimContext,
  req: StreamContainersRequest__Output,
  send: (res: StreamContainersResponse) => void,
  ctx: CallContext,
): Promise<void> {
  const containers = await findContainers(shim, req.filter, ctx.signal);
  sendInBatches(containers, STREAM_BATCH, (batch) => send({ containers: batch }));
}
