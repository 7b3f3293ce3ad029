// Which cgroup directories a container's metrics are read from. The stats RPCs need three v1
// controllers (../cgroups/paths.ts); the metrics also read cpu (CFS throttling, shares,
// quota) and blkio, so the v1 case keeps a directory per controller. Pure.
import * as path from 'node:path';
import type { CgroupDriver } from '../config/flags';
import { cgroupPathFor, dirUnder, usesV1, type CgroupMount, type ProcCgroupEntry } from '../cgroups/paths';

export const V1_METRIC_CONTROLLERS = ['cpu', 'cpuacct', 'memory', 'pids', 'blkio'] as const;
export type V1MetricController = (typeof V1_METRIC_CONTROLLERS)[number];

export type MetricCgroupDirs =
  | { version: 1; dirs: Partial<Record<V1MetricController, string>> }
  | { version: 2; dir: string };

/** The directories of a process from its /proc/<pid>/cgroup entries; undefined when none is visible. */
export function metricDirsOf(entries: readonly ProcCgroupEntry[], mounts: readonly CgroupMount[]): MetricCgroupDirs | undefined {
  if (usesV1(mounts)) {
    const dirs: Partial<Record<V1MetricController, string>> = {};
    for (const controller of V1_METRIC_CONTROLLERS) {
      const mount = mounts.find((m) => m.version === 1 && m.controllers.includes(controller));
      const entry = entries.find((e) => e.controllers.includes(controller));
      const dir = mount && entry ? dirUnder(mount, entry.path) : undefined;
      if (dir !== undefined) dirs[controller] = dir;
    }
    return Object.keys(dirs).length > 0 ? { version: 1, dirs } : undefined;
  }
  const unified = mounts.find((m) => m.version === 2);
  const entry = entries.find((e) => e.controllers.length === 0);
  const dir = unified && entry ? dirUnder(unified, entry.path) : undefined;
  return dir === undefined ? undefined : { version: 2, dir };
}

/** The same from Docker's naming, for a container whose process cannot be looked at. */
export function metricDirsByNaming(driver: CgroupDriver, cgroupParent: string, id: string, mounts: readonly CgroupMount[]): MetricCgroupDirs | undefined {
  const cgroupPath = cgroupPathFor(driver, cgroupParent, id);
  const entries: ProcCgroupEntry[] = usesV1(mounts)
    ? V1_METRIC_CONTROLLERS.map((c) => ({ controllers: [c], path: cgroupPath }))
    : [{ controllers: [], path: cgroupPath }];
  return metricDirsOf(entries, mounts);
}

/** The directory holding a cgroup file: v1 by the controller its name starts with. */
export function dirOfFile(dirs: MetricCgroupDirs, file: string): string | undefined {
  if (dirs.version === 2) return dirs.dir;
  const controller = file.slice(0, file.indexOf('.')) as V1MetricController;
  return dirs.dirs[controller];
}

/** Where the container's process list is: any controller's directory lists the same processes. */
export function procsFileOf(dirs: MetricCgroupDirs): string | undefined {
  const dir = dirs.version === 2 ? dirs.dir : (dirs.dirs.pids ?? dirs.dirs.memory ?? dirs.dirs.cpuacct);
  return dir === undefined ? undefined : path.posix.join(dir, 'cgroup.procs');
}
