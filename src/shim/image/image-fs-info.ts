// ImageFsInfo: how much of Docker's storage images take, and how much the containers' writable
// layers take, counted on disk (du -x) so kubelet's image garbage collection and eviction act
// on real figures. Docker keeps both under <DockerRootDir>/<storage driver>; a container's
// writable layer is the directory holding its UpperDir (plus the "-init" layer beside it).
import type { ShimContext } from '../context';
import * as path from 'node:path';
import type { CallContext, FilesystemUsage, ImageFsInfoRequest__Output, ImageFsInfoResponse } from '../../cri/types';
import { DockerNotFoundError, UnimplementedError } from '../../errors';
import { nowNanos } from '../../util/time';
import { diskUsage, type DiskUsage } from '../../util/disk-usage';

/** Directories of every container's writable layer (and its init layer). */
async function containerLayerDirs(shim: ShimContext, signal: AbortSignal): Promise<string[]> {
  const containers = await shim.docker.listContainers({ all: true }, { signal });
  const dirs = await Promise.all(
    containers.map(async (c) => {
      try {
        const data = (await shim.docker.inspectContainer(c.Id, { signal })).GraphDriver?.Data as Record<string, unknown> | undefined;
        const upper = data?.UpperDir;
        if (typeof upper !== 'string' || upper === '') return [];
        const layer = path.dirname(upper);
        return [layer, `${layer}-init`];
      } catch (err) {
        if (err instanceof DockerNotFoundError) return []; // removed meanwhile
        throw err;
      }
    }),
  );
  return dirs.flat();
}

function usage(mountpoint: string, u: DiskUsage, timestamp: string): FilesystemUsage {
  return { timestamp, fsId: { mountpoint }, usedBytes: { value: String(u.bytes) }, inodesUsed: { value: String(u.inodes) } };
}

export async function imageFsInfo(shim: ShimContext, _req: ImageFsInfoRequest__Output, ctx: CallContext): Promise<ImageFsInfoResponse> {
  const info = await shim.docker.info({ signal: ctx.signal });
  if (!info.DockerRootDir || !info.Driver) {
    throw new UnimplementedError('ImageFsInfo: Docker did not report its root directory and storage driver');
  }
  const storage = path.join(info.DockerRootDir, info.Driver);
  const layerDirs = await containerLayerDirs(shim, ctx.signal);
  const timestamp = nowNanos();
  const [images, containers] = await Promise.all([
    // Image layers plus Docker's image metadata (layer and image databases).
    diskUsage([storage, path.join(info.DockerRootDir, 'image')], new Set(layerDirs)),
    diskUsage(layerDirs),
  ]);
  return {
    imageFilesystems: [usage(storage, images, timestamp)],
    containerFilesystems: [usage(storage, containers, timestamp)],
  };
}
