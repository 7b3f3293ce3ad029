// The disk a container's writable layer takes (its overlay UpperDir, counted as `du -x` does).
// Walking a tree costs a stat per file, so each container's figure is kept for a short TTL
// and concurrent askers share one walk: kubelet asks every few seconds and a figure up to
// LAYER_USAGE_TTL_MS old is good enough for eviction decisions.
import { diskUsage, type DiskUsage } from '../util/disk-usage';

export const LAYER_USAGE_TTL_MS = 10_000;

interface Entry {
  dir: string;
  at: number;
  usage: Promise<DiskUsage>;
}

export class LayerUsageCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs: number = LAYER_USAGE_TTL_MS,
    private readonly measure: (dir: string) => Promise<DiskUsage> = (dir) => diskUsage([dir]),
    private readonly now: () => number = Date.now,
  ) {}

  usage(id: string, dir: string): Promise<DiskUsage> {
    const cached = this.entries.get(id);
    if (cached && cached.dir === dir && this.now() - cached.at < this.ttlMs) return cached.usage;
    const entry: Entry = { dir, at: this.now(), usage: this.measure(dir) };
    // A failed walk is not remembered: the next call tries again.
    entry.usage.catch(() => {
      if (this.entries.get(id) === entry) this.entries.delete(id);
    });
    this.entries.set(id, entry);
    return entry.usage;
  }

  prune(keep: (id: string) => boolean): void {
    for (const id of this.entries.keys()) if (!keep(id)) this.entries.delete(id);
  }
}
