// ImageStatus: the image a reference names, or an empty answer when Docker has none (kubelet
// then pulls it); `verbose` adds the image's config as JSON.
import type { ShimContext } from '../context';
import type { CallContext, ImageStatusRequest__Output, ImageStatusResponse } from '../../cri/types';
import { DockerNotFoundError, InvalidArgumentError } from '../../errors';
import { imageFromInspect, verboseImageInfo } from '../../translate/to-cri/image-convert';
import { sandboxImageId } from './pinned';
import { checkLocalImageRef } from './image-reference';

export async function imageStatus(shim: ShimContext, req: ImageStatusRequest__Output, ctx: CallContext): Promise<ImageStatusResponse> {
  if (!req.image) throw new InvalidArgumentError('image is required');
  const ref = checkLocalImageRef(req.image.image, 'image.image');
  let inspected;
  try {
    inspected = await shim.docker.inspectImage(ref, { signal: ctx.signal });
  } catch (err) {
    if (err instanceof DockerNotFoundError) return {};
    throw err;
  }
  const pinnedId = await sandboxImageId(shim, ctx.signal);
  const response: ImageStatusResponse = { image: imageFromInspect(inspected, inspected.Id === pinnedId) };
  if (req.verbose) response.info = verboseImageInfo(inspected);
  return response;
}
