// Where Docker's image store keeps what the storage figures measure: on a graph driver, the
// layer database's records (./image-layers.ts) and each container's writable layer named by its
// inspect; on the containerd image store, the snapshotter's numbered directories
// (./snapshot-layers.ts) and a running container's snapshot read from its root mount. And what
// the images take besides their layers.
import * as path from 'node:path';
import { containerdContentDir, containerdMetadataDir, writableLayerDir, type ImageStoreLayout } from '../docker/documents';
import type { ContainerInspect } from '../docker/types';
import { readImageLayer, type ImageLayer } from './image-layers';
import { listSnapshotDirs } from './snapshot-layers';

export class LayerLocations {
  readonly mountpoint: string;
  /** Undefined when Docker named no root or driver: nothing is measured (ImageFsInfo is UNIMPLEMENTED). */
  private readonly layout: ImageStoreLayout | undefined;

  constructor(
    readonly root: string,
    readonly driver: string,
    layout: ImageStoreLayout | undefined,
    /** A running container's snapshot directory on the containerd store. */
    private readonly snapshotDirOf: (pid: number, snapshotter: string) => string | undefined,
  ) {
    const known = root !== '' && driver !== '';
    this.layout = layout ?? (known ? { kind: 'graphdriver', mountpoint: path.join(root, driver), containerdRoot: '' } : undefined);
    this.mountpoint = this.layout?.mountpoint ?? path.join(root, driver);
  }

  get known(): boolean {
    return this.layout !== undefined;
  }

  get onContainerd(): boolean {
    return this.layout?.kind === 'containerd';
  }

  /** A graph driver's layer, by chain ID, from Docker's layer database. */
  imageLayer(chain: string): ImageLayer | undefined {
    return readImageLayer(this.root, this.driver, chain);
  }

  /** The containerd store's layers: every snapshot directory (one listing). */
  snapshotDirs(): string[] {
    return listSnapshotDirs(this.mountpoint);
  }

  /**
   * A container's writable layer directory: Docker names it on a graph driver; on the containerd
   * store it is read from the container's root mount while it runs, and kept (`knownDir`: a
   * snapshot is the container's for its whole life). Undefined when neither tells.
   */
  containerLayerDir(inspect: Pick<ContainerInspect, 'State' | 'GraphDriver'>, knownDir: string | undefined): string | undefined {
    const upper = writableLayerDir(inspect);
    if (upper !== undefined) return path.dirname(upper);
    if (!this.onContainerd) return undefined;
    if (knownDir !== undefined) return knownDir;
    return inspect.State.Running ? this.snapshotDirOf(inspect.State.Pid, this.mountpoint) : undefined;
  }

  /** A container's init layer beside its writable layer (none on the containerd store, where it counts with the images). */
  initLayerDir(dir: string | undefined): string | undefined {
    return this.onContainerd || dir === undefined ? undefined : `${dir}-init`;
  }

  /** What the images take besides their layers: Docker's image metadata, or containerd's content store and databases. */
  metadataDirs(): string[] {
    if (!this.onContainerd) return [path.join(this.root, 'image'), path.join(this.mountpoint, 'l')];
    const containerdRoot = this.layout!.containerdRoot;
    return [containerdContentDir(containerdRoot), containerdMetadataDir(containerdRoot), path.join(this.mountpoint, 'metadata.db')];
  }
}
