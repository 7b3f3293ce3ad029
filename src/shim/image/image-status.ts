// ImageStatus: the image a reference names, or an empty answer when Docker has none (kubelet
// then pulls it); `verbose` adds the image's config as JSON.
import type { ShimContext } from '../context';
import type { CallContext, ImageStatusRequest__Output, ImageStatusResponse } from '../../cri/types';
import { DockerNotFoundError, InvalidArgumentError } from '../../errors';
import { imageFromInspect, verboseImageInfo } from '../../translate/to-cri/image-convert';
import { sandboxImageId } from './support/pinned';
import { checkLocalImageRef } from '../../conventions/image-reference';

/**
 * On the containerd store an image's inspect counts its blobs only (compressed) while the list
 * counts its blobs and its unpacked snapshots: the list's figure, the disk the image takes, is
 * the one ListImages gives, so ImageStatus takes it too (from the list ListImages asks, which
 * the state cache keeps). A graph driver's inspect and list agree.
 */
async function containerdListedSize(shim: ShimContext, id: string, signal: AbortSignal): Promise<number | undefined> {
  if ((await shim.dockerFacts.imageStore({ signal })) !== 'containerd') return undefined;
  return (await shim.objects.list({ kind: 'image', image: id }, { signal })).find((s) => s.Id === id)?.Size;
}

export async function imageStatus(shim: ShimContext, req: ImageStatusRequest__Output, ctx: CallContext): Promise<ImageStatusResponse> {
  if (!req.image) throw new InvalidArgumentError('image is required');
  const ref = checkLocalImageRef(req.image.image, 'image.image');
  let inspected;
  try {
    inspected = await shim.dockerCached.inspectImage(ref, { signal: ctx.signal });
  } catch (err) {
    if (err instanceof DockerNotFoundError) return {};
    throw err;
  }
  const [pinnedId, listedSize] = await Promise.all([sandboxImageId(shim, ctx.signal), containerdListedSize(shim, inspected.Id, ctx.signal)]);
  const response: ImageStatusResponse = { image: imageFromInspect(inspected, inspected.Id === pinnedId, listedSize) };
  if (req.verbose) response.info = verboseImageInfo(inspected);
  return response;
}
