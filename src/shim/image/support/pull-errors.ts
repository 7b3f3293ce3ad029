// Why a pull failed, in CRI terms (pure). Docker reports most registry refusals as a 500 with
// the registry's words, or as an error message in the progress stream; kubelet and operators
// need NOT_FOUND / UNAUTHENTICATED / PERMISSION_DENIED / UNAVAILABLE instead of UNKNOWN.
import {
  CancelledError,
  DeadlineExceededError,
  DockerError,
  DockerNotFoundError,
  DockerServerError,
  NotFoundError,
  PermissionDeniedError,
  ShimError,
  UnauthenticatedError,
  UnavailableError,
  errorMessage,
} from '../../../errors';
import { quote } from '../../../util/quote';

const UNAUTHENTICATED = /no basic auth credentials|authentication required|unauthorized|incorrect username or password|\b401\b/i;
const DENIED = /\bdenied\b|forbidden|\b403\b/i;
const NOT_FOUND = /manifest unknown|not found|name unknown|no such image/i;
/** Go's net errors, as Docker passes them on when the registry cannot be reached at all. */
const UNREACHABLE = /connection refused|no such host|i\/o timeout|network is unreachable|no route to host|TLS handshake timeout|connection reset by peer/i;

/** The error a client sees for a failed pull of `image`; the daemon's words are kept after a clear prefix. */
export function pullFailure(image: string, err: unknown): Error {
  if (err instanceof DeadlineExceededError || err instanceof CancelledError) return err;
  const detail = errorMessage(err).replace(/^pull [^:]+: (Docker answered \d+: )?/, '');
  const what = `pulling image ${quote(image)}`;
  if (err instanceof DockerNotFoundError || (err instanceof DockerServerError && NOT_FOUND.test(detail) && !UNAUTHENTICATED.test(detail))) {
    return new NotFoundError(`${what}: image not found in its registry: ${detail}`, { cause: err });
  }
  if (err instanceof DockerError && UNAUTHENTICATED.test(detail)) {
    return new UnauthenticatedError(`${what}: the registry refused the credentials (or needs some): ${detail}`, { cause: err });
  }
  if (err instanceof DockerError && DENIED.test(detail)) {
    return new PermissionDeniedError(`${what}: the registry denied access: ${detail}`, { cause: err });
  }
  if (err instanceof DockerServerError && UNREACHABLE.test(detail)) {
    return new UnavailableError(`${what}: the registry cannot be reached: ${detail}`, { cause: err });
  }
  if (err instanceof DockerServerError) {
    return new DockerServerError(`${what}: ${detail}`, err.httpStatus, { cause: err });
  }
  if (err instanceof ShimError) return err;
  return new DockerServerError(`${what}: ${detail}`, 0, { cause: err });
}
