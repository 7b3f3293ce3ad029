// Disk usage of directory trees, counted as `du -x` counts it: allocated blocks (not apparent
// sizes), every inode once however many hard links it has, directories included, and never
// crossing into another filesystem (a running container's overlay mount, for one).
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

export interface DiskUsage {
  bytes: number;
  inodes: number;
}

/** Usage of `roots`, skipping any directory whose path is in `exclude`. */
export async function diskUsage(roots: readonly string[], exclude: ReadonlySet<string> = new Set()): Promise<DiskUsage> {
  const seen = new Set<string>();
  const total: DiskUsage = { bytes: 0, inodes: 0 };

  const visit = async (p: string, dev: number | undefined): Promise<void> => {
    if (exclude.has(p)) return;
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
