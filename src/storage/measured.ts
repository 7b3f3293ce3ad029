import type { DiskUsage } from '../util/disk-usage';
import type { ImageLayer } from './image-layers';

/** A measured figure and when it was measured (ms since the epoch). */
export interface Measured extends DiskUsage {
  atMs: number;
}

/** An image layer (a chain ID's, or a snapshot's) and its figure once measured. */
export interface ImageLayerState {
  /** Undefined when Docker's layer database has no usable record of it. */
  layer: ImageLayer | undefined;
  measured: Measured | undefined;
}
