// Where a container's cgroup lives on the host, worked out from the text of
// /proc/self/mountinfo (where each hierarchy is mounted) and /proc/<pid>/cgroup (the process's
// path in each hierarchy). Pure: the caller reads the files. Handles cgroup v1 (one hierarchy
// per controller or co-mounted ones such as "cpu,cpuacct"), v2 (one unified hierarchy) and the
// hybrid layout (v1 controllers plus an empty unified tree, where the figures are in v1).
import * as path from 'node:path';
import type { CgroupDriver } from '../config/flags';

/** One mounted cgroup hierarchy. */
export interface CgroupMount {
  version: 1 | 2;
  /** Where it is mounted, e.g. /sys/fs/cgroup/memory. */
  mountPoint: string;
  /** Which cgroup of the hierarchy the mount shows at its top ("/" unless bind-mounted or namespaced). */
  root: string;
  /** v1 controllers of the hierarchy (e.g. ["cpu", "cpuacct"]); empty for v2. */
  controllers: string[];
}

/** One line of /proc/<pid>/cgroup. */
export interface ProcCgroupEntry {
  /** v1 controllers ("name=systemd" included); empty for the v2 line "0::/path". */
  controllers: string[];
  path: string;
}

/** The v1 controllers whose directories are kept: the stats read three, the metrics cpu and blkio too. */
const READ_CONTROLLERS = ['cpu', 'cpuacct', 'memory', 'pids', 'blkio'] as const;
type ReadController = (typeof READ_CONTROLLERS)[number];

/** The directories a container's (or pod's) figures are read from. */
export type CgroupDirs =
  | { version: 1; dirs: Partial<Record<ReadController, string>> }
  | { version: 2; dir: string };

const V1_CONTROLLERS = new Set([
  'cpu', 'cpuacct', 'cpuset', 'memory', 'pids', 'blkio', 'devices', 'freezer', 'net_cls', 'net_prio',
  'perf_event', 'hugetlb', 'rdma', 'misc',
]);

/** mountinfo escapes space, tab, newline and backslash as octal (\040). */
function unescapeOctal(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

export function parseMountInfo(text: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const before = line.slice(0, sep).split(' ');
    const after = line.slice(sep + 3).split(' ');
    const fsType = after[0];
    if (before.length < 5 || (fsType !== 'cgroup' && fsType !== 'cgroup2')) continue;
    const root = unescapeOctal(before[3]!);
    const mountPoint = unescapeOctal(before[4]!);
    if (fsType === 'cgroup2') {
      mounts.push({ version: 2, mountPoint, root, controllers: [] });
    } else {
      const superOptions = (after[2] ?? '').split(',');
      const controllers = superOptions.filter((o) => V1_CONTROLLERS.has(o) || o.startsWith('name='));
      mounts.push({ version: 1, mountPoint, root, controllers });
    }
  }
  return mounts;
}

export function parseProcCgroup(text: string): ProcCgroupEntry[] {
  const entries: ProcCgroupEntry[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    entries.push({ controllers: m[2] === '' ? [] : m[2]!.split(','), path: m[3]! });
  }
  return entries;
}

/** `cgroupPath` as a directory under `mount`, or undefined when the mount does not show it. */
export function dirUnder(mount: CgroupMount, cgroupPath: string): string | undefined {
  const root = mount.root === '/' ? '' : mount.root.replace(/\/$/, '');
  if (root !== '' && cgroupPath !== root && !cgroupPath.startsWith(`${root}/`)) return undefined;
  const rel = cgroupPath.slice(root.length);
  // The path comes from the kernel, but a path with ".." must never lead outside the mount.
  if (rel.split('/').some((p) => p === '..')) return undefined;
  return path.posix.join(mount.mountPoint, rel);
}

function v1Mount(mounts: readonly CgroupMount[], controller: string): CgroupMount | undefined {
  return mounts.find((m) => m.version === 1 && m.controllers.includes(controller));
}

/** True when the figures live in v1 hierarchies (pure v1 or hybrid). */
export function usesV1(mounts: readonly CgroupMount[]): boolean {
  return v1Mount(mounts, 'memory') !== undefined || v1Mount(mounts, 'cpuacct') !== undefined;
}

/**
 * The directories of a process, from its /proc/<pid>/cgroup entries; undefined when none of
 * the controllers the figures come from (cpuacct, memory, pids) is visible.
 */
export function dirsFromProcCgroup(entries: readonly ProcCgroupEntry[], mounts: readonly CgroupMount[]): CgroupDirs | undefined {
  if (usesV1(mounts)) {
    const dirs: Partial<Record<ReadController, string>> = {};
    for (const controller of READ_CONTROLLERS) {
      const mount = v1Mount(mounts, controller);
      const entry = entries.find((e) => e.controllers.includes(controller));
      const dir = mount && entry ? dirUnder(mount, entry.path) : undefined;
      if (dir !== undefined) dirs[controller] = dir;
    }
    return dirs.cpuacct || dirs.memory || dirs.pids ? { version: 1, dirs } : undefined;
  }
  const unified = mounts.find((m) => m.version === 2);
  const entry = entries.find((e) => e.controllers.length === 0);
  const dir = unified && entry ? dirUnder(unified, entry.path) : undefined;
  return dir ? { version: 2, dir } : undefined;
}

/** The same directories for a cgroup path known without a process (see cgroupPathFor). */
export function dirsFromCgroupPath(cgroupPath: string, mounts: readonly CgroupMount[]): CgroupDirs | undefined {
  const entries: ProcCgroupEntry[] = usesV1(mounts)
    ? READ_CONTROLLERS.map((c) => ({ controllers: [c], path: cgroupPath }))
    : [{ controllers: [], path: cgroupPath }];
  return dirsFromProcCgroup(entries, mounts);
}

/** The directory holding a cgroup file: under v1, that of the controller its name starts with. */
export function dirOfFile(dirs: CgroupDirs, file: string): string | undefined {
  if (dirs.version === 2) return dirs.dir;
  return dirs.dirs[file.slice(0, file.indexOf('.')) as ReadController];
}

/** A directory listing the cgroup's processes: any controller's lists the same ones. */
export function procsDirOf(dirs: CgroupDirs): string | undefined {
  return dirs.version === 2 ? dirs.dir : (dirs.dirs.pids ?? dirs.dirs.memory ?? dirs.dirs.cpuacct);
}

/**
 * systemd's path for a slice name: each "-" in the name is a level, so
 * "kubepods-burstable-pod1.slice" is /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice.
 */
export function slicePath(slice: string): string {
  if (slice === '' || slice === '-.slice') return '/';
  const name = slice.replace(/\.slice$/, '');
  const parts = name.split('-');
  const levels = parts.map((_p, i) => `${parts.slice(0, i + 1).join('-')}.slice`);
  return `/${levels.join('/')}`;
}

/**
 * Where Docker puts a container's cgroup, by its driver's naming, for when the container's
 * process cannot be looked at (another PID namespace): cgroupfs puts it at
 * <parent or /docker>/<id>; systemd at <parent slice path or /system.slice>/docker-<id>.scope.
 * `parent` is the container's HostConfig.CgroupParent as Docker holds it.
 */
export function cgroupPathFor(driver: CgroupDriver, parent: string, id: string): string {
  if (driver === 'systemd') {
    const slice = parent === '' ? 'system.slice' : parent;
    return path.posix.join(slicePath(slice), `docker-${id}.scope`);
  }
  return path.posix.join(parent === '' ? '/docker' : parent, id);
}

/**
 * The pod's own cgroup, one level above its pause container's, when the pod was given a cgroup
 * parent (kubelet always gives one: /kubepods/<qos>/pod<uid> or its slice). Without one the
 * level above is Docker's shared default (/docker, system.slice), so undefined.
 */
export function podCgroupDirs(pauseDirs: CgroupDirs, cgroupParent: string, pauseId: string): CgroupDirs | undefined {
  if (cgroupParent === '') return undefined;
  const parentName = path.posix.basename(cgroupParent.replace(/\/+$/, ''));
  const up = (dir: string | undefined): string | undefined => {
    if (dir === undefined) return undefined;
    const leaf = path.posix.basename(dir);
    const parent = path.posix.dirname(dir);
    // Only step up from the container's own directory into the named parent.
    if (!leaf.includes(pauseId) || path.posix.basename(parent) !== parentName) return undefined;
    return parent;
  };
  if (pauseDirs.version === 2) {
    const dir = up(pauseDirs.dir);
    return dir ? { version: 2, dir } : undefined;
  }
  const dirs: Partial<Record<ReadController, string>> = {};
  for (const controller of READ_CONTROLLERS) {
    const dir = up(pauseDirs.dirs[controller]);
    if (dir !== undefined) dirs[controller] = dir;
  }
  return dirs.cpuacct && dirs.memory ? { version: 1, dirs } : undefined;
}
