// The ImageService as the shim serves it: each RPC mapped to its module under ./image.
// Credentials for pulls that carry none come from `credentials` (the configured credential
// provider plugins); RPCs missing here answer UNIMPLEMENTED.
import { NO_CREDENTIALS, type CredentialSource } from '../credentials/providers';
import type { ImageServiceImpl } from '../cri/types';
import type { ShimContext } from './context';
import type { ImageContext } from './image/context';
import { imageFsInfo } from './image/image-fs-info';
import { imageStatus } from './image/image-status';
import { listImages, streamImages } from './image/list-images';
import { pullImage } from './image/pull-image';
import { removeImage } from './image/remove-image';

export function imageService(shim: ShimContext, credentials: CredentialSource = NO_CREDENTIALS): ImageServiceImpl {
  const images: ImageContext = { ...shim, credentials };
  return {
    ListImages: (req, ctx) => listImages(images, req, ctx),
    StreamImages: (req, send, ctx) => streamImages(images, req, send, ctx),
    ImageStatus: (req, ctx) => imageStatus(images, req, ctx),
    PullImage: (req, ctx) => pullImage(images, req, ctx),
    RemoveImage: (req, ctx) => removeImage(images, req, ctx),
    ImageFsInfo: (req, ctx) => imageFsInfo(images, req, ctx),
  };
}
