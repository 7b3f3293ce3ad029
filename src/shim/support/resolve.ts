// Turns an ID from a request (full, or a unique prefix as Docker accepts) into the sandbox or
// container this shim made (a typed query, ../object-store/shim-objects.ts). Anything else, including
// a Docker container the shim did not make, is NOT_FOUND; an ambiguous prefix is INVALID_ARGUMENT.
import type { CallOptions } from '../../docker/client';
import type { ShimContext } from '../context';
import type { ObjectKind, ShimIdentity, ShimObject } from '../../object-store/shim-objects';
import type { ContainerInspect } from '../../docker/types';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '../../errors';
import { validateId } from '../../conventions/ids';
import { quote } from '../../util/quote';

/** What resolving asks: the store of the shim's objects, and Docker for the inspect. */
type Resolver = Pick<ShimContext, 'objects' | 'dockerCached'>;

export async function resolveShimObject({ objects }: Resolver, kind: ObjectKind, field: string, id: string, opts?: CallOptions): Promise<ShimObject> {
  validateId(field, id);
  const matches = await objects.list({ kind, id }, opts);
  if (matches.length === 0) throw new NotFoundError(`${kind} ${quote(id)} not found`);
  if (matches.length > 1) {
    throw new InvalidArgumentError(`${field}: ${quote(id)} matches ${matches.length} ${kind}s; give more of the ID`);
  }
  return matches[0]!;
}

/**
 * As resolveShimObject, for calls that use only what never changes of the object (its ID, name,
 * labels, network mode): one the state cache holds under the full ID is answered at once, not
 * after the shim's own changes still being applied (a stop's refresh, about a millisecond), which
 * only its state could be behind on. What such a call then asks Docker to do is Docker's truth.
 */
export async function identifyShimObject(shim: Resolver, kind: ObjectKind, field: string, id: string, opts?: CallOptions): Promise<ShimIdentity> {
  // identify answers full IDs only; anything else is validated by resolveShimObject.
  return shim.objects.identify(kind, id) ?? resolveShimObject(shim, kind, field, id, opts);
}

/** The shim's container a request's container_id names (as resolveShimObject), inspected. */
export async function inspectShimContainer(shim: Resolver, containerId: string, opts?: CallOptions): Promise<ContainerInspect> {
  const { id } = await resolveShimObject(shim, 'container', 'container_id', containerId, opts);
  return shim.dockerCached.inspectContainer(id, opts);
}

/** As resolveShimObject, for calls that need the object running (exec, attach, port forward). */
export async function resolveRunningShimObject(shim: Resolver, kind: ObjectKind, field: string, id: string, opts?: CallOptions): Promise<ShimObject> {
  const found = await resolveShimObject(shim, kind, field, id, opts);
  if (found.status !== 'running') throw new FailedPreconditionError(`${kind === 'sandbox' ? 'pod sandbox' : 'container'} ${found.id} is not running`);
  return found;
}
