// Disk usage of directory trees, counted as `du -x` counts it: allocated blocks (not apparent
// sizes), every inode once however many hard links it has, directories included, and never
// crossing into another filesystem (a running container's overlay mount, for one). A walk
// costs a stat per file, so it never runs on a call's path: src/storage walks in the
// background, paced, and stops when told.
//
// What a walk keeps does not grow with the files a pod writes: only inodes with more than one
// link are remembered (a file with one link is met once; a set of every inode cost ~270 bytes
// each, GiBs for a layer of millions of files), and directories are read as a stream of entries
// (fs.opendir), never as a whole list. At most MAX_OPEN_DIRS directories are open at once; a
// directory deeper than that is walked after its branch, from a list of such directories.
import * as fs from 'node:fs/promises';
import type { Dir, Stats } from 'node:fs';
import * as path from 'node:path';

export interface DiskUsage {
  bytes: number;
  inodes: number;
}

/** Directories one walk holds open at once (one per level of depth it is in). */
export const MAX_OPEN_DIRS = 16;
/** Entries read from a directory at a time (Node's default is 32: more round trips to the thread pool). */
const DIR_BUFFER_ENTRIES = 128;

/**
 * The inodes a walk met that more than one name may lead to (files with more than one link), so
 * each is counted once. Directories have no hard links, and a file with one link is met once.
 */
export class LinkedInodes {
  private readonly seen = new Set<string>();

  /** Whether the walk meets this inode for the first time. */
  firstSight(st: Pick<Stats, 'dev' | 'ino' | 'nlink' | 'isDirectory'>): boolean {
    if (st.nlink <= 1 || st.isDirectory()) return true;
    const key = `${st.dev}:${st.ino}`;
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    return true;
  }

  /** Inodes remembered. */
  get size(): number {
    return this.seen.size;
  }
}

export interface WalkOptions {
  /** Directories whose path is here are skipped, with everything below them. */
  exclude?: ReadonlySet<string>;
  /** Ends the walk (it rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Awaited after each entry: lets the caller bound the walk's share of the CPU. */
  pace?: () => Promise<void> | void;
  /** Where the walk remembers hard-linked inodes (a fresh set by default). */
  linked?: LinkedInodes;
}

/** Usage of `roots` as du -x counts it. */
export async function diskUsage(roots: readonly string[], opts: WalkOptions = {}): Promise<DiskUsage> {
  const exclude = opts.exclude ?? new Set<string>();
  const linked = opts.linked ?? new LinkedInodes();
  const total: DiskUsage = { bytes: 0, inodes: 0 };
  /** Directories met with MAX_OPEN_DIRS open already: counted, their entries walked later. */
  const deferred: Array<{ dir: string; dev: number }> = [];

  /** Counts the entry; answers its stats when it is a directory to go into. */
  const count = async (p: string, dev: number | undefined): Promise<Stats | undefined> => {
    if (exclude.has(p)) return undefined;
    opts.signal?.throwIfAborted();
    await opts.pace?.();
    let st;
    try {
      st = await fs.lstat(p);
    } catch {
      return undefined; // removed while we walked: a container or layer came and went
    }
    if (dev !== undefined && st.dev !== dev) return undefined;
    if (!linked.firstSight(st)) return undefined;
    total.bytes += st.blocks * 512;
    total.inodes += 1;
    return st.isDirectory() ? st : undefined;
  };

  /** Walks the entries of `dir`, with `open` directories open already. */
  const descend = async (dir: string, dev: number, open: number): Promise<void> => {
    let handle: Dir;
    try {
      handle = await fs.opendir(dir, { bufferSize: DIR_BUFFER_ENTRIES });
    } catch {
      return;
    }
    try {
      for (;;) {
        let entry;
        try {
          entry = await handle.read();
        } catch {
          return; // gone or unreadable while we read it
        }
        if (entry === null) return;
        const p = path.join(dir, entry.name);
        const st = await count(p, dev);
        if (!st) continue;
        if (open + 1 < MAX_OPEN_DIRS) await descend(p, st.dev, open + 1);
        else deferred.push({ dir: p, dev: st.dev });
      }
    } finally {
      await handle.close().catch(() => undefined);
    }
  };

  for (const root of roots) {
    const st = await count(root, undefined);
    if (st) await descend(root, st.dev, 0);
    for (let next = deferred.pop(); next; next = deferred.pop()) await descend(next.dir, next.dev, 0);
  }
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
