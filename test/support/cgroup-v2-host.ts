// A cgroup v2 host laid out under a temp directory from test/fixtures/cgroup-v2 (see its
// README): the mount table, a pod's cgroup with its pause container and one container, as
// Docker's cgroupfs or systemd driver places them under kubelet's parent, and /proc/<pid>/cgroup
// of both processes. The caller removes `root`.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CgroupDriver } from '../../src/config/flags';
import { tempDir } from './temp';

export const V2_FIXTURES = path.resolve(__dirname, '../../../test/fixtures/cgroup-v2');
/** The container of the fixtures (its ID is in proc/<driver>/cgroup). */
export const V2_CONTAINER_ID = '4f1c2b8e9a7d6c5b'.repeat(4);
export const V2_PAUSE_ID = '9e8d7c6b5a4f3e2d'.repeat(4);
export const V2_POD_UID = '6f2d1c3b-8a9e-4c7d-b5a6-0e1f2a3b4c5d';
export const V2_CONTAINER_PID = 200;
export const V2_PAUSE_PID = 100;

/** kubelet's pod cgroup parent as Docker's driver is given it. */
export function podParentFor(driver: CgroupDriver): string {
  return driver === 'systemd' ? `kubepods-burstable-pod${V2_POD_UID.replace(/-/g, '_')}.slice` : `/kubepods/burstable/pod${V2_POD_UID}`;
}

export interface V2Host {
  root: string;
  procRoot: string;
  /** Where the unified hierarchy is "mounted". */
  cgroupRoot: string;
  podDir: string;
  containerDir: string;
  pauseDir: string;
}

function copyDir(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true });
  for (const name of fs.readdirSync(from)) fs.copyFileSync(path.join(from, name), path.join(to, name));
}

function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

export function layOutV2Host(driver: CgroupDriver): V2Host {
  const root = tempDir(`cgroup-v2-${driver}`);
  const procRoot = path.join(root, 'proc');
  const cgroupRoot = path.join(root, 'sys', 'fs', 'cgroup');
  const mountinfo = fs.readFileSync(path.join(V2_FIXTURES, 'proc', 'self', 'mountinfo'), 'utf8');
  write(path.join(procRoot, 'self', 'mountinfo'), mountinfo.replace(' /sys/fs/cgroup ', ` ${cgroupRoot} `));
  const containerLine = fs.readFileSync(path.join(V2_FIXTURES, 'proc', driver, 'cgroup'), 'utf8');
  write(path.join(procRoot, String(V2_CONTAINER_PID), 'cgroup'), containerLine);
  write(path.join(procRoot, String(V2_PAUSE_PID), 'cgroup'), containerLine.replace(V2_CONTAINER_ID, V2_PAUSE_ID));
  const containerPath = containerLine.trim().slice('0::'.length);
  const containerDir = path.join(cgroupRoot, containerPath);
  const podDir = path.dirname(containerDir);
  const pauseDir = path.join(podDir, path.basename(containerDir).replace(V2_CONTAINER_ID, V2_PAUSE_ID));
  copyDir(path.join(V2_FIXTURES, 'pod'), podDir);
  copyDir(path.join(V2_FIXTURES, 'container'), containerDir);
  copyDir(path.join(V2_FIXTURES, 'pause'), pauseDir);
  write(path.join(containerDir, 'cgroup.procs'), `${V2_CONTAINER_PID}\n`);
  write(path.join(pauseDir, 'cgroup.procs'), `${V2_PAUSE_PID}\n`);
  write(path.join(podDir, 'cgroup.procs'), '');
  return { root, procRoot, cgroupRoot, podDir, containerDir, pauseDir };
}
