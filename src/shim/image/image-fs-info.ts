// ImageFsInfo: how much of Docker's storage the images take, and how much the containers'
// writable layers take, for kubelet's image garbage collection and eviction. The figures are
// kept by ../../storage, measured in the background: the call reads memory and walks nothing,
// whatever the size of the image store. Each figure carries the time it stands for.
import type { ShimContext } from '../context';
import type { CallContext, ImageFsInfoRequest__Output, ImageFsInfoResponse } from '../../cri/types';
import { filesystemUsage } from '../../stats/stats-convert';
import { msToNanos } from '../../util/time';

export async function imageFsInfo(shim: ShimContext, _req: ImageFsInfoRequest__Output, ctx: CallContext): Promise<ImageFsInfoResponse> {
  const { mountpoint, images, containers } = await shim.storage.imageFs(ctx.signal);
  return {
    imageFilesystems: [filesystemUsage(images, mountpoint, msToNanos(images.atMs))],
    containerFilesystems: [filesystemUsage(containers, mountpoint, msToNanos(containers.atMs))],
  };
}
