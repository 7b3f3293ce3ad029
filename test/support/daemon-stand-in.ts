// Processes of the test's own standing in for the Docker daemon (--runtime-cgroups'
// --test-only-docker-daemon-pids), so that no test touches the host's dockerd.
//
// No test mounts a cgroup v1 hierarchy of its own: on this kernel a named v1 hierarchy
// (mount -t cgroup -o none,name=…) outlives its unmount, listed in every process's
// /proc/<pid>/cgroup with nothing mounted, and containerd's shim then finds no mount for it and
// Docker's stats come back empty until the machine reboots.
import { spawn } from 'node:child_process';

/** A `sleep` the test started, standing in for dockerd; `stop()` kills it and waits until it is reaped. */
export async function standIn(): Promise<{ pid: number; stop(): Promise<void> }> {
  const child = spawn('sleep', ['600'], { stdio: 'ignore' });
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
