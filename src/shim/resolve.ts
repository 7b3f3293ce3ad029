// Turns an ID from a request (full, or a unique prefix as Docker accepts) into the full ID of
// a sandbox or container this shim made. Anything else, including a Docker container the shim
// did not make, is NOT_FOUND; an ambiguous prefix is INVALID_ARGUMENT.
import type { CallOptions, DockerClient } from '../docker/client';
import type { ContainerSummary } from '../docker/types';
import { InvalidArgumentError, NotFoundError } from '../errors';
import { CONTAINER_TYPE_LABEL, TYPE_CONTAINER, TYPE_SANDBOX } from './labels';
import { quote } from '../util/quote';

export type ShimObjectKind = 'sandbox' | 'container';

const HEX_ID = /^[0-9a-f]{1,64}$/;

/** Checks the shape of an ID before it reaches Docker (or a file name). */
export function validateId(field: string, id: string): string {
  if (id === '') throw new InvalidArgumentError(`${field} is required`);
  if (!HEX_ID.test(id)) throw new InvalidArgumentError(`${field}: ${quote(id)} is not a container ID (hex, up to 64 characters)`);
  return id;
}

/**
 * For Stop and Remove, which succeed for any ID that names nothing (kubelet and the conformance
 * suite send UUIDs and names): false when `id` cannot name anything the shim made, so there is
 * nothing to do. Such an ID never reaches Docker or a file name. An empty ID is still refused.
 */
export function mayNameShimObject(field: string, id: string): boolean {
  if (id === '') throw new InvalidArgumentError(`${field} is required`);
  return HEX_ID.test(id);
}

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
