// The image layers' measured figures, saved in the shim's root directory. A layer never changes
// (content-addressed: Docker makes a new one for new content), so a restarted shim takes the
// figures it measured before instead of walking every layer again: on this machine's store of
// 170,000 files that walk took minutes at a quarter of a core after every restart, and its
// garbage kept the idle shim's RSS ~15 MiB up meanwhile. A saved figure is taken only for the
// same chain ID in the same directory (its cache-id) under the same Docker root and driver.
// A missing, corrupt or foreign file means every layer is walked again (logged).
import * as path from 'node:path';
import { isFullId } from '../conventions/ids';
import { errorMessage } from '../errors';
import { writeFileAtomic } from '../util/atomic-write';
import type { Logger } from '../util/logger';
import { readTextNoFollow } from '../util/read-no-follow';

const FORMAT = 'cri-docker-shim.image-layers/v1';

/** A layer's figure as measured (du -x), where, and when. */
export interface SavedLayer {
  dir: string;
  bytes: number;
  inodes: number;
  atMs: number;
}

interface LayerFiguresDocument {
  format: typeof FORMAT;
  root: string;
  driver: string;
  layers: Record<string, SavedLayer>;
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/** The figures in `text` saved for this root and driver; entries of any other shape are left out. */
export function decodeLayerFigures(text: string, root: string, driver: string): Map<string, SavedLayer> {
  const doc = JSON.parse(text) as Partial<LayerFiguresDocument> | null;
  if (doc === null || typeof doc !== 'object' || doc.format !== FORMAT || typeof doc.layers !== 'object' || doc.layers === null) {
    throw new Error(`not a ${FORMAT} document`);
  }
  const out = new Map<string, SavedLayer>();
  // Another Docker root or driver: none of its layers are these.
  if (doc.root !== root || doc.driver !== driver) return out;
  const under = path.join(root, driver) + path.sep;
  for (const [chain, l] of Object.entries(doc.layers)) {
    if (!chain.startsWith('sha256:') || !isFullId(chain.slice('sha256:'.length))) continue;
    if (l === null || typeof l !== 'object' || typeof l.dir !== 'string' || !l.dir.startsWith(under)) continue;
    if (!isCount(l.bytes) || !isCount(l.inodes) || !isCount(l.atMs)) continue;
    out.set(chain, { dir: l.dir, bytes: l.bytes, inodes: l.inodes, atMs: l.atMs });
  }
  return out;
}

export function encodeLayerFigures(root: string, driver: string, layers: ReadonlyMap<string, SavedLayer>): string {
  const doc: LayerFiguresDocument = { format: FORMAT, root, driver, layers: Object.fromEntries(layers) };
  return JSON.stringify(doc);
}

export class LayerFiguresFile {
  constructor(
    readonly file: string,
    private readonly log: Logger,
  ) {}

  /** What was saved for this root and driver; nothing when there is no file or it cannot be read (logged). */
  load(root: string, driver: string): Map<string, SavedLayer> {
    let text: string;
    try {
      text = readTextNoFollow(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log.warn({ file: this.file, err: errorMessage(err) }, 'image layer figures unreadable; every layer is measured again');
      return new Map();
    }
    try {
      return decodeLayerFigures(text, root, driver);
    } catch (err) {
      this.log.warn({ file: this.file, err: errorMessage(err) }, 'image layer figures corrupt; every layer is measured again');
      return new Map();
    }
  }

  async save(root: string, driver: string, layers: ReadonlyMap<string, SavedLayer>): Promise<void> {
    await writeFileAtomic(this.file, encodeLayerFigures(root, driver, layers));
  }
}
