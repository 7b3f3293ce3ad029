// Turns an ID from a request (full, or a unique prefix as Docker accepts) into the sandbox or
// container this shim made (a typed query, ../docker/shim-objects.ts). Anything else, including
// a Docker container the shim did not make, is NOT_FOUND; an ambiguous prefix is INVALID_ARGUMENT.
import type { CallOptions, DockerClient } from '../docker/client';
import type { ObjectKind, ShimObject } from '../docker/shim-objects';
import type { ContainerInspect } from '../docker/types';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '../errors';
import { validateId } from '../conventions/ids';
import { quote } from '../util/quote';

export async function resolveShimObject(docker: DockerClient, kind: ObjectKind, field: string, id: string, opts?: CallOptions): Promise<ShimObject> {
  validateId(field, id);
  const matches = await docker.listObjects({ kind, id }, opts);
  if (matches.length === 0) throw new NotFoundError(`${kind} ${quote(id)} not found`);
  if (matches.length > 1) {
    throw new InvalidArgumentError(`${field}: ${quote(id)} matches ${matches.length} ${kind}s; give more of the ID`);
  }
  return matches[0]!;
}

/** The shim's container a request's container_id names (as resolveShimObject), inspected. */
export async function inspectShimContainer(docker: DockerClient, containerId: string, opts?: CallOptions): Promise<ContainerInspect> {
  const { id } = await resolveShimObject(docker, 'container', 'container_id', containerId, opts);
  return docker.inspectContainer(id, opts);
}

/** As resolveShimObject, for calls that need the object running (exec, attach, port forward). */
export async function resolveRunningShimObject(docker: DockerClient, kind: ObjectKind, field: string, id: string, opts?: CallOptions): Promise<ShimObject> {
  const found = await resolveShimObject(docker, kind, field, id, opts);
  if (found.status !== 'running') throw new FailedPreconditionError(`${kind === 'sandbox' ? 'pod sandbox' : 'container'} ${found.id} is not running`);
  return found;
}
