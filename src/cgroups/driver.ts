// Which cgroup driver Docker uses, and how a pod's cgroup parent is written for it. kubelet
// hands us cgroupfs-style paths ("/kubepods/burstable/pod<uid>"); with the systemd driver
// Docker wants a slice name ("kubepods-burstable-pod<uid>.slice").
import type { CgroupDriver } from '../config/flags';
import type { DockerInfo } from '../docker/types';

export interface CgroupSetup {
  driver: CgroupDriver;
  /** 1 or 2; undefined when Docker does not say. */
  version: 1 | 2 | undefined;
  /** Set when Docker did not name a usable driver and cgroupfs was assumed. */
  warning?: string;
}

export class CgroupDriverMismatchError extends Error {}

export function detectCgroupSetup(info: DockerInfo, requested: CgroupDriver | undefined): CgroupSetup {
  const version = info.CgroupVersion === '2' ? 2 : info.CgroupVersion === '1' ? 1 : undefined;
  const reported = info.CgroupDriver;
  let driver: CgroupDriver;
  let warning: string | undefined;
  if (reported === 'cgroupfs' || reported === 'systemd') {
    driver = reported;
  } else {
    driver = 'cgroupfs';
    warning = `Docker reports cgroup driver ${JSON.stringify(reported ?? '')}; assuming cgroupfs`;
  }
  if (requested !== undefined && requested !== driver) {
    throw new CgroupDriverMismatchError(
      `--cgroup-driver=${requested} does not match Docker's cgroup driver ${driver}; ` +
        `make them agree (set it in Docker's daemon.json "exec-opts": ["native.cgroupdriver=${requested}"], or drop the flag)`,
    );
  }
  return warning === undefined ? { driver, version } : { driver, version, warning };
}

/**
 * Converts a cgroupfs-style parent to the systemd slice form when the driver is systemd.
 * A parent already ending in ".slice" is left alone; "" stays "" (Docker's default).
 */
export function cgroupParentFor(driver: CgroupDriver, parent: string): string {
  if (driver !== 'systemd' || parent === '' || parent.endsWith('.slice')) return parent;
  const parts = parent.split('/').filter((p) => p !== '');
  if (parts.length === 0) return '-.slice';
  // Each level's slice name repeats its ancestors joined by '-', as systemd's unit naming does;
  // Docker's systemd driver takes the innermost name and expands it the same way.
  const escaped = parts.map((p) => p.replace(/-/g, '_'));
  return `${escaped.join('-')}.slice`;
}
