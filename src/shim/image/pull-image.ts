// PullImage: normalise the reference, pick credentials (the request's; else each one the
// credential providers offer, in turn; else none), pull under the progress watchdog and the
// request's deadline, and answer with the image ID kubelet will create containers from.
import type { ShimContext } from '../context';
import type { AuthConfig__Output, CallContext, PullImageRequest__Output, PullImageResponse } from '../../cri/types';
import type { RegistryAuth } from '../../docker/types';
import { DeadlineExceededError, errorMessage, InvalidArgumentError, NotFoundError, PermissionDeniedError, UnauthenticatedError } from '../../errors';
import { pullFailure } from './support/pull-errors';
import { PullWatch, type PullSummary } from './support/pull-progress';
import { parseImageReference, type ImageReference } from '../../conventions/image-reference';
import { credentialFromRequest, toDockerRegistryAuth } from '../../translate/to-docker/registry-auth';
import { quote } from '../../util/quote';

export async function pullImage(shim: ShimContext, req: PullImageRequest__Output, ctx: CallContext): Promise<PullImageResponse> {
  if (!req.image) throw new InvalidArgumentError('image is required');
  const ref = parseImageReference(req.image.image, 'image.image');
  return { imageRef: await pullWithCredentials(shim, ref, req.auth, ctx) };
}

/**
 * Pulls `ref` with the request's credentials, else with each set the credential sources offer
 * in turn, else anonymously; answers the image ID. RunPodSandbox pulls the pause image this way too.
 */
export async function pullWithCredentials(
  shim: ShimContext,
  ref: ImageReference,
  requestAuth: AuthConfig__Output | null,
  ctx: CallContext,
): Promise<string> {
  const auths = await candidateAuths(shim, requestAuth, ref);
  let lastError: unknown;
  let pulled: PullOutcome | undefined;
  for (const auth of auths) {
    try {
      pulled = await pullOnce(shim, ref, auth, ctx);
      lastError = undefined;
      break;
    } catch (err) {
      lastError = err;
      // Only a refused login is worth retrying with the next credentials.
      if (!(err instanceof UnauthenticatedError || err instanceof PermissionDeniedError || err instanceof NotFoundError)) throw err;
    }
  }
  if (lastError !== undefined) throw lastError;
  const image = await shim.dockerCached.inspectImage(ref.pullRef, { signal: ctx.signal });
  // The image's own size with the stream's counts: on the containerd store a fast pull's stream
  // counts no bytes (layersUncounted), and its inspect counts the blobs, what was fetched at most.
  shim.log.info({ image: ref.normalized, ...pulled, imageBytes: image.Size }, 'pulled image');
  return image.Id;
}

/** The auths to try, in order; [undefined] is one anonymous attempt. */
async function candidateAuths(
  shim: ShimContext,
  requestAuth: AuthConfig__Output | null,
  ref: ImageReference,
): Promise<Array<RegistryAuth | undefined>> {
  const fromRequest = credentialFromRequest(requestAuth);
  if (fromRequest) return [toDockerRegistryAuth(fromRequest, ref.domain, 'auth')];
  const provided = await shim.credentials.credentialsFor(ref.normalized);
  const auths: RegistryAuth[] = [];
  for (const c of provided) {
    try {
      auths.push(toDockerRegistryAuth(c, ref.domain, 'credential provider auth'));
    } catch (err) {
      shim.log.warn({ image: ref.normalized, error: errorMessage(err) }, 'skipping unusable provided credentials');
    }
  }
  return auths.length > 0 ? auths : [undefined];
}

type PullOutcome = PullSummary & { durationMs: number };

async function pullOnce(shim: ShimContext, ref: ImageReference, auth: RegistryAuth | undefined, ctx: CallContext): Promise<PullOutcome> {
  const watch = new PullWatch(ref.normalized, shim.config.imagePullProgressDeadlineMs, shim.log);
  const started = Date.now();
  try {
    await shim.dockerCached.pullImage(ref.pullRef, auth, (p) => watch.onProgress(p), { signal: AbortSignal.any([ctx.signal, watch.signal]) });
  } catch (err) {
    if (ctx.signal.aborted && ctx.signal.reason instanceof DeadlineExceededError) {
      throw new DeadlineExceededError(`pulling image ${quote(ref.normalized)}: the request's deadline passed`, { cause: err });
    }
    throw pullFailure(ref.normalized, err);
  } finally {
    watch.stop();
  }
  return { durationMs: Date.now() - started, ...watch.result() };
}
