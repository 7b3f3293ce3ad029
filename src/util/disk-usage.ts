// Disk usage of directory trees, counted as `du -x` counts it: allocated blocks (not apparent
// sizes), every inode once however many hard links it has, directories included, and never
// crossing into another filesystem (a running container's overlay mount, for one). A walk
// costs a stat per file, so it never runs on a call's path: src/storage walks in the
// background, paced, and stops when told.
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

export interface DiskUsage {
  bytes: number;
  inodes: number;
}

export interface WalkOptions {
  /** Directories whose path is here are skipped, with everything below them. */
  exclude?: ReadonlySet<string>;
  /** Ends the walk (it rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Awaited after each entry: lets the caller bound the walk's share of the CPU. */
  pace?: () => Promise<void> | void;
}

/** Usage of `roots` as du -x counts it. */
export async function diskUsage(roots: readonly string[], opts: WalkOptions = {}): Promise<DiskUsage> {
  const exclude = opts.exclude ?? new Set<string>();
  const seen = new Set<string>();
  const total: DiskUsage = { bytes: 0, inodes: 0 };

  const visit = async (p: string, dev: number | undefined): Promise<void> => {
    if (exclude.has(p)) return;
    opts.signal?.throwIfAborted();
    await opts.pace?.();
    let st;
    try {
      st = await fs.lstat(p);
    } catch {
      return; // removed while we walked: a container or layer came and went
    }
    if (dev !== undefined && st.dev !== dev) return;
    const key = `${st.dev}:${st.ino}`;
    if (seen.has(key)) return;
    seen.add(key);
    total.bytes += st.blocks * 512;
    total.inodes += 1;
    if (!st.isDirectory()) return;
    let names: string[];
    try {
      names = await fs.readdir(p);
    } catch {
      return;
    }
    for (const name of names) await visit(path.join(p, name), st.dev);
  };

  for (const root of roots) await visit(root, undefined);
  return total;
}

/**
 * A pace for walks that keeps their share of one core near `share`: after each `sliceMs` of
 * work it rests for as long as that share asks (a quarter: three times the work). A gap of more
 * than a slice between two calls was idle, not work (the pace outlives its walks: one serves
 * every walk of src/storage), so a slice starts afresh after it.
 */
export function dutyCyclePace(share: number, sliceMs = 20, now: () => number = () => performance.now()): () => Promise<void> | void {
  let sliceStart = now();
  let lastCall = sliceStart;
  return () => {
    const at = now();
    if (at - lastCall > sliceMs) sliceStart = at;
    lastCall = at;
    const worked = at - sliceStart;
    if (worked < sliceMs) return;
    const rest = (worked * (1 - share)) / share;
    return new Promise<void>((resolve) =>
      setTimeout(() => {
        sliceStart = now();
        resolve();
      }, rest),
    );
  };
}
