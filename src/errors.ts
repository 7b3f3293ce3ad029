// Every failure the shim reports is one of these classes. Handlers and the Docker layer throw
// them; `toGrpcStatus` is the single place that decides which gRPC code a client sees.
import { status as GrpcCode } from '@grpc/grpc-js';

export abstract class ShimError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The request itself is wrong: a missing or malformed field. Name the field in the message. */
export class InvalidArgumentError extends ShimError {}
/** A sandbox, container or image the request names does not exist. */
export class NotFoundError extends ShimError {}
/** Creating something whose name or ID is already taken. */
export class AlreadyExistsError extends ShimError {}
/** The object exists but is in a state that forbids the call (image in use, container not running). */
export class FailedPreconditionError extends ShimError {}
/** A deadline (the request's, a pull's progress deadline, an exec timeout) ran out. */
export class DeadlineExceededError extends ShimError {}
/** Something the CRI asks for that Docker cannot do, or that we have not built. */
export class UnimplementedError extends ShimError {}
export class PermissionDeniedError extends ShimError {}
export class UnauthenticatedError extends ShimError {}
export class ResourceExhaustedError extends ShimError {}
/** The filesystem (or the quota) holding a directory the shim writes is full; it works again once space is freed. */
class DiskFullError extends ResourceExhaustedError {
  constructor(
    readonly directory: string,
    cause: NodeJS.ErrnoException,
  ) {
    const what = cause.code === 'EDQUOT' ? 'disk quota exceeded' : 'no space left on device';
    super(`${what} in ${directory} (${cause.code}${cause.syscall ? ` on ${cause.syscall}` : ''})`, { cause });
  }
}
/** Something the call depends on (a registry, a network) cannot be reached right now; retrying may work. */
export class UnavailableError extends ShimError {}
/** The caller went away (cancelled the call). */
export class CancelledError extends ShimError {}
/** A program the shim runs on the caller's behalf (a CNI plugin) failed; its own message is passed on. */
export class PluginFailedError extends ShimError {}

// Errors from the Docker Engine API, already classified by the Docker client.
export abstract class DockerError extends ShimError {}
export class DockerNotFoundError extends DockerError {}
export class DockerConflictError extends DockerError {}
export class DockerNotModifiedError extends DockerError {}
export class DockerTimeoutError extends DockerError {}
export class DockerUnreachableError extends DockerError {}
export class DockerBadRequestError extends DockerError {}
export class DockerAuthError extends DockerError {}
/** Any other answer from the daemon (5xx and unexpected codes). */
export class DockerServerError extends DockerError {
  constructor(
    message: string,
    readonly httpStatus: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface GrpcStatus {
  code: GrpcCode;
  details: string;
}

const CODE_BY_CLASS: ReadonlyArray<[abstract new (...args: never[]) => Error, GrpcCode]> = [
  [InvalidArgumentError, GrpcCode.INVALID_ARGUMENT],
  [NotFoundError, GrpcCode.NOT_FOUND],
  [AlreadyExistsError, GrpcCode.ALREADY_EXISTS],
  [FailedPreconditionError, GrpcCode.FAILED_PRECONDITION],
  [DeadlineExceededError, GrpcCode.DEADLINE_EXCEEDED],
  [UnimplementedError, GrpcCode.UNIMPLEMENTED],
  [PermissionDeniedError, GrpcCode.PERMISSION_DENIED],
  [UnauthenticatedError, GrpcCode.UNAUTHENTICATED],
  [ResourceExhaustedError, GrpcCode.RESOURCE_EXHAUSTED],
  [UnavailableError, GrpcCode.UNAVAILABLE],
  [CancelledError, GrpcCode.CANCELLED],
  [PluginFailedError, GrpcCode.UNKNOWN],
  [DockerNotFoundError, GrpcCode.NOT_FOUND],
  [DockerConflictError, GrpcCode.ALREADY_EXISTS],
  [DockerNotModifiedError, GrpcCode.FAILED_PRECONDITION],
  [DockerTimeoutError, GrpcCode.DEADLINE_EXCEEDED],
  [DockerUnreachableError, GrpcCode.UNAVAILABLE],
  [DockerBadRequestError, GrpcCode.INVALID_ARGUMENT],
  [DockerAuthError, GrpcCode.UNAUTHENTICATED],
  [DockerServerError, GrpcCode.UNKNOWN],
];

/**
 * The longest status message a client receives. Messages quote callers' values only in short
 * prefixes; this cut is the backstop, since a status travels in a trailer and many clients
 * refuse trailers over 8 KiB (grpc-js then waits for its deadline instead of failing).
 */
export const MAX_STATUS_DETAILS = 1024;

function capped(details: string): string {
  return details.length <= MAX_STATUS_DETAILS ? details : `${details.slice(0, MAX_STATUS_DETAILS - 1)}…`;
}

/** The one mapping from a thrown value to the status a CRI client receives. */
export function toGrpcStatus(err: unknown): GrpcStatus {
  if (err instanceof Error) {
    for (const [cls, code] of CODE_BY_CLASS) {
      if (err instanceof cls) return { code, details: capped(err.message) };
    }
    return { code: GrpcCode.INTERNAL, details: capped(`internal error: ${err.message}`) };
  }
  return { code: GrpcCode.INTERNAL, details: capped(`internal error: ${String(err)}`) };
}

/** `err` as a DiskFullError naming `directory` when it is ENOSPC or EDQUOT; else `err` itself. */
export function diskFullOr(err: unknown, directory: string): unknown {
  const e = err as NodeJS.ErrnoException | undefined;
  return e instanceof Error && (e.code === 'ENOSPC' || e.code === 'EDQUOT') ? new DiskFullError(directory, e) : err;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
