// The image layers' figures across restarts (./layer-figures-file.ts on disk): loaded at start,
// an entry taken once its layer is seen again, saved when a layer was measured or dropped, and
// every LAYER_FIGURES_SAVE_MS during a long first walk.
import { errorMessage } from '../errors';
import type { Logger } from '../util/logger';
import type { ImageLayer } from './image-layers';
import type { LayerFiguresFile, SavedLayer } from './layer-figures-file';
import type { ImageLayerState, Measured } from './measured';

/** How often the image layers' figures are saved while the walker is still measuring. */
const LAYER_FIGURES_SAVE_MS = 30_000;

export class SavedLayerFigures {
  /** What an earlier run measured (loaded at start); an entry is taken once its layer is seen. */
  private saved = new Map<string, SavedLayer>();
  /** A layer was measured or dropped since the figures were last saved. */
  private changed = false;
  private savedAtMs = 0;

  constructor(
    private readonly file: LayerFiguresFile | undefined,
    private readonly root: string,
    private readonly driver: string,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {}

  /** Reads what an earlier run saved for this root and driver. */
  load(): void {
    this.saved = this.file?.load(this.root, this.driver) ?? new Map();
  }

  /** An earlier run's figure of a layer seen for the first time, when it measured it in the same directory. */
  take(key: string, layer: ImageLayer | undefined): Measured | undefined {
    const saved = this.saved.get(key);
    this.saved.delete(key);
    return layer && saved?.dir === layer.dir ? { bytes: saved.bytes, inodes: saved.inodes, atMs: saved.atMs } : undefined;
  }

  /** A layer was measured or dropped. */
  markChanged(): void {
    this.changed = true;
  }

  /** Whether a save during a long walk is due (it keeps what the walk did if the shim stops). */
  due(): boolean {
    return this.now() - this.savedAtMs >= LAYER_FIGURES_SAVE_MS;
  }

  /** Saves the measured layers' figures, when that changed (logged, not thrown, if it fails). */
  async save(layers: ReadonlyMap<string, ImageLayerState>): Promise<void> {
    if (!this.file || !this.changed) return;
    this.changed = false;
    this.savedAtMs = this.now();
    const figures = new Map<string, SavedLayer>();
    for (const [key, state] of layers) {
      if (state.layer && state.measured) figures.set(key, { dir: state.layer.dir, bytes: state.measured.bytes, inodes: state.measured.inodes, atMs: state.measured.atMs });
    }
    try {
      await this.file.save(this.root, this.driver, figures);
    } catch (err) {
      this.changed = true;
      this.log.warn({ file: this.file.file, err: errorMessage(err) }, 'image layer figures not saved; the next start measures the layers again');
    }
  }
}
