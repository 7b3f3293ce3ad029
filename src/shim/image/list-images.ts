// ListImages: every image Docker has (top-level ones, as `docker images`
// shows), narrowed by the request's filter, the sandbox image marked pinned.
import type { ShimContext } from '../context';
import type {
  CallContext,
  Image,
  ImageFilter__Output,
  ListImagesRequest__Output,
  ListImagesResponse,
} from '../../cri/types';
import { imageFromSummary } from '../../translate/to-cri/image-convert';
import { imageMatchesFilter } from './image-filter';
import { sandboxImageId } from './pinned';

/** The list ListImages asks for (top-level images, with digests). */
export const LIST_QUERY = { all: false, digests: true } as const;

export async function findImages(shim: ShimContext, filter: ImageFilter__Output | null, ctx: CallContext): Promise<Image[]> {
  const [summaries, pinnedId] = await Promise.all([
    shim.docker.listImages(LIST_QUERY, { signal: ctx.signal }),
    sandboxImageId(shim, ctx.signal),
  ]);
  const wanted = filter?.image?.image ?? '';
  return summaries.map((s) => imageFromSummary(s, s.Id === pinnedId)).filter((img) => imageMatchesFilter(img, wanted));
}

export async function listImages(shim: ShimContext, req: ListImagesRequest__Output, ctx: CallContext): Promise<ListImagesResponse> {
  return { images: await findImages(shim, req.filter, ctx) };
}

