// The shape of container and sandbox IDs in requests: hex, up to Docker's 64 characters (a
// unique prefix is accepted, as Docker accepts one). Checked before an ID reaches Docker or
// becomes part of a file name.
import { InvalidArgumentError } from '../errors';
import { quote } from '../util/quote';

const HEX_ID = /^[0-9a-f]{1,64}$/;
const FULL_ID = /^[0-9a-f]{64}$/;

/** A whole ID (64 hex digits): a container's, a sandbox's, or the hex of a sha256 digest. */
export function isFullId(id: string): boolean {
  return FULL_ID.test(id);
}

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
