// RemoveImage: by tag or digest removes that one reference; by ID removes the image with every
// tag it has. An image that is already gone is success; one a container still uses is
// FAILED_PRECONDITION, checked before anything is removed so a refusal leaves every tag.
// By ID, "gone" is taken from Docker only once an inspect of the ID agrees: a removal that lost
// a race with another removal of the same image is answered 404 ("reference does not exist")
// or 500 "unrecognized image ID" while the winner is still deleting it, and the caller's next
// ImageStatus must not find the image (critest: "should not fail on simultaneous RemoveImage calls").
import { setTimeout as sleep } from 'node:timers/promises';
import type { ShimContext } from '../context';
import type { CallContext, RemoveImageRequest__Output, RemoveImageResponse } from '../../cri/types';
import type { ImageInspect } from '../../docker/types';
import { DockerConflictError, DockerNotFoundError, FailedPreconditionError, InvalidArgumentError } from '../../errors';
import { checkLocalImageRef } from '../../conventions/image-reference';
import { namesImageById } from '../../object-store/image-query';

export async function removeImage(shim: ShimContext, req: RemoveImageRequest__Output, ctx: CallContext): Promise<RemoveImageResponse> {
  if (!req.image) throw new InvalidArgumentError('image is required');
  const ref = checkLocalImageRef(req.image.image, 'image.image');
  const opts = { signal: ctx.signal };
  let image: ImageInspect;
  try {
    image = await shim.dockerCached.inspectImage(ref, opts);
  } catch (err) {
    if (err instanceof DockerNotFoundError) return {};
    throw err;
  }
  const byId = namesImageById(ref, image.Id);
  if (byId) {
    const users = await shim.objects.containersUsingImage(image.Id, opts);
    if (users.length > 0) {
      const ids = users.map((id) => id.slice(0, 12)).join(', ');
      throw new FailedPreconditionError(`image ${ref} is in use by container(s) ${ids}; remove them first`);
    }
  }
  // By ID, Docker refuses an image tagged in several repositories unless forced; no
  // container uses it (checked above), so force only lifts that refusal.
  const removed = await removeOnce(shim, byId ? image.Id : ref, byId, ref, opts);
  if (removed === 'gone' && byId) await untilGone(shim, image.Id, opts);
  return {};
}

/** One removal: 'gone' when Docker says there was nothing to remove; in use is FAILED_PRECONDITION. */
async function removeOnce(shim: ShimContext, target: string, force: boolean, ref: string, opts: { signal: AbortSignal }): Promise<'removed' | 'gone'> {
  try {
    await shim.dockerCached.removeImage(target, { force, noprune: false }, opts);
    return 'removed';
  } catch (err) {
    if (err instanceof DockerNotFoundError) return 'gone';
    if (err instanceof DockerConflictError) throw new FailedPreconditionError(`image ${ref} is in use: ${err.message}`, { cause: err });
    throw err;
  }
}

/** How long a removal answered "gone" waits for another removal of the image to finish it. */
const GONE_WAIT_MS = 10_000;
const GONE_POLL_MS = 20;

/**
 * Returns once an inspect of `id` finds nothing; any other answer (found, or an error such as
 * the 500 "layer does not exist" 20.10 gives while the image is half deleted) is asked again.
 * Past GONE_WAIT_MS (the other removal stalled, or the image came back) it removes the image
 * once more, with "gone" as success again.
 */
async function untilGone(shim: ShimContext, id: string, opts: { signal: AbortSignal }): Promise<void> {
  const deadline = Date.now() + GONE_WAIT_MS;
  for (;;) {
    try {
      await shim.dockerCached.inspectImage(id, opts);
    } catch (err) {
      if (err instanceof DockerNotFoundError) return;
      // Mid-removal, 20.10 may answer an inspect 500 "layer does not exist": not gone yet.
      opts.signal.throwIfAborted();
    }
    if (Date.now() >= deadline) break;
    await sleep(GONE_POLL_MS, undefined, { signal: opts.signal });
  }
  await removeOnce(shim, id, true, id, opts);
}
