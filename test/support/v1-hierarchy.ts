// A cgroup v1 hierarchy of the test's own: a named one with no controllers
// (mount -t cgroup -o none,name=…), so the kernel's real cgroup.procs rules apply while no
// controller, and none of the host's hierarchies, is touched. Processes moved in it stay in the
// host's hierarchies where they were. Only processes the test started may be put in it.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { waitFor } from './poll';
import { tempDir } from './temp';

export interface V1Hierarchy {
  /** The directory the test hands over as the cgroup root; the hierarchy is mounted at `mountPoint` under it. */
  readonly root: string;
  readonly mountPoint: string;
  /** The hierarchy's name, as /proc/<pid>/cgroup shows it: "name=<name>". */
  readonly name: string;
  /** The process's path in this hierarchy, from its /proc/<pid>/cgroup. */
  cgroupOf(pid: number): string | undefined;
  /** Removes every cgroup made in it (their processes must have ended), unmounts it and removes `root`. */
  close(): void;
}

export function mountV1Hierarchy(): V1Hierarchy {
  const root = tempDir('v1-hierarchy');
  const mountPoint = path.join(root, 'h');
  fs.mkdirSync(mountPoint);
  // Unique: mounting a name that exists shows that hierarchy, shared with whoever made it.
  const name = `cdstest${randomBytes(4).toString('hex')}`;
  try {
    execFileSync('mount', ['-t', 'cgroup', '-o', `none,name=${name}`, 'cgroup', mountPoint], { stdio: 'pipe' });
  } catch (err) {
    fs.rmSync(root, { recursive: true, force: true });
    throw err;
  }
  return {
    root,
    mountPoint,
    name,
    cgroupOf(pid) {
      const line = fs
        .readFileSync(`/proc/${pid}/cgroup`, 'utf8')
        .split('\n')
        .find((l) => l.split(':')[1] === `name=${name}`);
      return line?.slice(line.indexOf(':', line.indexOf(':') + 1) + 1);
    },
    close() {
      // Deepest first; a hierarchy whose cgroups are all gone goes with its last mount.
      const dirs: string[] = [];
      const walk = (dir: string): void => {
        for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
          if (e.isDirectory()) {
            walk(path.join(dir, e.name));
            dirs.push(path.join(dir, e.name));
          }
        }
      };
      walk(mountPoint);
      for (const dir of dirs) fs.rmdirSync(dir);
      execFileSync('umount', [mountPoint]);
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

/** A `sleep` the test started, standing in for dockerd; `stop()` kills it and waits until it is reaped. */
export function standIn(): Promise<{ pid: number; stop(): Promise<void> }> {
  return started('sleep', ['600']);
}

/**
 * A zombie the test made: `sh` starts a short `sleep` in the background and becomes a long one
 * that never reaps it. Its PID is taken by cgroup.procs without the process moving.
 */
export async function zombie(): Promise<{ pid: number; stop(): Promise<void> }> {
  const parent = await started('sh', ['-c', 'sleep 0 & exec sleep 600']);
  const pid = await waitFor('the zombie', () => {
    const children = fs.readdirSync(`/proc/${parent.pid}/task`).flatMap((t) =>
      fs.readFileSync(`/proc/${parent.pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter((c) => c !== ''),
    );
    const z = children.map(Number).find((c) => /^State:\s+Z/m.test(fs.readFileSync(`/proc/${c}/status`, 'utf8')));
    return z;
  });
  return { pid, stop: parent.stop };
}

async function started(command: string, args: string[]): Promise<{ pid: number; stop(): Promise<void> }> {
  const child = spawn(command, args, { stdio: 'ignore' });
  await new Promise<void>((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
