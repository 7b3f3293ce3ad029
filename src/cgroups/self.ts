// --runtime-cgroups: move the shim's own process into a named cgroup at start-up, as
// cri-dockerd does, so its CPU and memory are accounted where the operator wants them.
import * as fs from 'node:fs';
import * as path from 'node:path';

export class RuntimeCgroupError extends Error {}

export function validateCgroupPath(cgroup: string): string {
  if (!cgroup.startsWith('/') || cgroup.split('/').some((p) => p === '..' || p === '.')) {
    throw new RuntimeCgroupError(`--runtime-cgroups: ${JSON.stringify(cgroup)} must be an absolute cgroup path without . or ..`);
  }
  return path.posix.normalize(cgroup);
}

/** Writes our PID into cgroup.procs of `cgroup` under every mounted hierarchy (v1) or the unified one (v2). */
export function moveSelfToCgroup(cgroup: string, cgroupVersion: 1 | 2 | undefined, root = '/sys/fs/cgroup'): string[] {
  const rel = validateCgroupPath(cgroup).slice(1);
  const hierarchies =
    cgroupVersion === 2
      ? [root]
      : fs
          .readdirSync(root, { withFileTypes: true })
          .filter((d) => d.isDirectory() && !d.name.includes(','))
          .map((d) => path.join(root, d.name))
          .filter((dir) => fs.existsSync(path.join(dir, 'cgroup.procs')));
  const moved: string[] = [];
  for (const hierarchy of hierarchies) {
    const dir = path.join(hierarchy, rel);
    try {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(process.pid));
      moved.push(dir);
    } catch (err) {
      throw new RuntimeCgroupError(`--runtime-cgroups: cannot move the shim into ${dir}: ${(err as Error).message}`);
    }
  }
  return moved;
}
