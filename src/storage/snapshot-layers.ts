// Where containerd's snapshotter keeps the layers of Docker's containerd image store. Each
// snapshot is a numbered directory <snapshotter>/snapshots/<n> (with `fs`, its files, and
// `work`, overlayfs's); the numbers are containerd's own and the names Docker gives them
// (a container's ID, a layer's chain ID) are only in containerd's metadata database. Docker's
// container inspect names no directory on this store, so a running container's writable layer is
// read from its root mount: the overlay's upperdir, in its init process's mountinfo.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readHead } from '../util/read-head';

/** How much of a container's mountinfo is read: its root mount is its first line. */
const MOUNTINFO_READ_BYTES = 64 * 1024;

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/**
 * The upperdir of the overlay mounted at "/" in `mountinfo` (proc(5)'s format), or undefined.
 * The first such line is the runtime's: a later mount over "/" (a privileged process's) is not
 * the container's layer.
 */
export function rootOverlayUpperDir(mountinfo: string): string | undefined {
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    if (fields[4] !== '/') continue;
    const dash = fields.indexOf('-', 6);
    if (dash < 0 || fields[dash + 1] !== 'overlay') return undefined;
    const options = (fields[dash + 3] ?? '').split(',');
    const upper = options.find((o) => o.startsWith('upperdir='));
    return upper === undefined ? undefined : unescapeMountField(upper.slice('upperdir='.length));
  }
  return undefined;
}

/** `upper` as <snapshotter>/snapshots/<n>/fs gives <snapshotter>/snapshots/<n>; anything else undefined. */
export function snapshotDirOf(upper: string, snapshotter: string): string | undefined {
  const snapshots = path.join(snapshotter, 'snapshots');
  const rel = path.relative(snapshots, upper);
  const m = /^(\d{1,18})\/fs$/.exec(rel);
  return m ? path.join(snapshots, m[1]!) : undefined;
}

/**
 * The snapshot directory of the container whose init process is `pid`, when its root is an
 * overlay over a snapshot of `snapshotter`; undefined otherwise (gone, another store).
 */
export function containerSnapshotDir(pid: number, snapshotter: string, procRoot = '/proc'): string | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const text = readHead(path.join(procRoot, String(pid), 'mountinfo'), MOUNTINFO_READ_BYTES);
  if (text === undefined) return undefined;
  const upper = rootOverlayUpperDir(text);
  return upper === undefined ? undefined : snapshotDirOf(upper, snapshotter);
}

/** The snapshot directories there are (<snapshotter>/snapshots/<n>); none when it cannot be read. */
export function listSnapshotDirs(snapshotter: string): string[] {
  const snapshots = path.join(snapshotter, 'snapshots');
  try {
    return fs
      .readdirSync(snapshots)
      .filter((name) => /^\d{1,18}$/.test(name))
      .map((name) => path.join(snapshots, name));
  } catch {
    return [];
  }
}
