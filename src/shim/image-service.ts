// The ImageService as the shim serves it: each RPC mapped to its module under ./image;
// RPCs missing here answer UNIMPLEMENTED.
import type { ImageServiceImpl } from '../cri/types';
import type { ShimContext } from './context';
import { imageFsInfo } from './image/image-fs-info';
import { imageStatus } from './image/image-status';
import { listImages } from './image/list-images';
import { streamImages } from './image/stream-images';
import { pullImage } from './image/pull-image';
import { removeImage } from './image/remove-image';

export function imageService(images: ShimContext): ImageServiceImpl {
  return {
    ListImages: (req, ctx) => listImages(images, req, ctx),
    StreamImages: (req, send, ctx) => streamImages(images, req, send, ctx),
    ImageStatus: (req, ctx) => imageStatus(images, req, ctx),
    PullImage: (req, ctx) => pullImage(images, req, ctx),
    RemoveImage: (req, ctx) => removeImage(images, req, ctx),
    ImageFsInfo: (req, ctx) => imageFsInfo(images, req, ctx),
  };
}
