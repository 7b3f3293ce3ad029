// ListImages: every image Docker has (top-level ones, as `docker images` shows), narrowed by
// the request's filter (the store's image query), the sandbox image marked pinned.
import type { ShimContext } from '../context';
import type {
  CallContext,
  Image,
  ImageFilter__Output,
  ListImagesRequest__Output,
  ListImagesResponse,
} from '../../cri/types';
import { imageFromSummary } from '../../translate/to-cri/image-convert';
import { sandboxImageId } from './support/pinned';

export async function findImages(shim: ShimContext, filter: ImageFilter__Output | null, ctx: CallContext): Promise<Image[]> {
  const [summaries, pinnedId] = await Promise.all([
    shim.objects.list({ kind: 'image', image: filter?.image?.image ?? '' }, { signal: ctx.signal }),
    sandboxImageId(shim, ctx.signal),
  ]);
  return summaries.map((s) => imageFromSummary(s, s.Id === pinnedId));
}

export async function listImages(shim: ShimContext, req: ListImagesRequest__Output, ctx: CallContext): Promise<ListImagesResponse> {
  return { images: await findImages(shim, req.filter, ctx) };
}

