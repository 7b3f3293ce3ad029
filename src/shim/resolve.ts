// Turns an ID from a request (full, or a unique prefix as Docker accepts) into the full ID of
// a sandbox or container this shim made. Anything else, including a Docker container the shim
// did not make, is NOT_FOUND; an ambiguous prefix is INVALID_ARGUMENT.
import type { CallOptions, DockerClient } from '../docker/client';
import type { ContainerSummary } from '../docker/types';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '../errors';
import { CONTAINER_TYPE_LABEL, TYPE_CONTAINER, TYPE_SANDBOX } from '../conventions/labels';
import { validateId } from '../conventions/ids';
import { quote } from '../util/quote';

export type ShimObjectKind = 'sandbox' | 'container';

export async function resolveShimObject(
  docker: DockerClient,
  kind: ShimObjectKind,
  field: string,
  id: string,
  opts?: CallOptions,
): Promise<ContainerSummary> {
  validateId(field, id);
  const type = kind === 'sandbox' ? TYPE_SANDBOX : TYPE_CONTAINER;
  const found = await docker.listContainers(
    { all: true, filters: { id: [id], label: [`${CONTAINER_TYPE_LABEL}=${type}`] } },
    opts,
  );
  // Docker's id filter matches anywhere in the ID on some versions; keep true prefixes only.
  const matches = found.filter((c) => c.Id.startsWith(id));
  if (matches.length === 0) throw new NotFoundError(`${kind} ${quote(id)} not found`);
  if (matches.length > 1) {
    throw new InvalidArgumentError(`${field}: ${quote(id)} matches ${matches.length} ${kind}s; give more of the ID`);
  }
  return matches[0]!;
}

/** As resolveShimObject, for calls that need the object running (exec, attach, port forward): its full ID. */
export async function resolveRunningShimObject(docker: DockerClient, kind: ShimObjectKind, field: string, id: string, opts?: CallOptions): Promise<string> {
  const { Id, State } = await resolveShimObject(docker, kind, field, id, opts);
  if (State !== 'running') throw new FailedPreconditionError(`${kind === 'sandbox' ? 'pod sandbox' : 'container'} ${Id} is not running`);
  return Id;
}
