// The shim started with --runtime-cgroups as a kubelet node's unit starts it, on this cgroup v1
// host: it starts (before, a new cpuset cgroup's ENOSPC ended it), warns of what it cannot do,
// and puts the Docker daemon in the cgroup. The daemon is a process of the test and the
// hierarchy one the test mounted (the tests-only flags), as no test moves the host's dockerd
// or any process between the host's cgroups; the code path is the shim's own otherwise.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { runShimToExit, startShim } from '../support/shim';
import { mountV1Hierarchy, standIn } from '../support/v1-hierarchy';

const CGROUP = '/system.slice/cri-docker.service';
const HOST_ROOT = '/sys/fs/cgroup';

/** The host's hierarchies that hold the cgroup now. */
function hostDirsOfCgroup(): string[] {
  return fs
    .readdirSync(HOST_ROOT)
    .map((h) => path.join(HOST_ROOT, h, CGROUP))
    .filter((dir) => fs.existsSync(dir));
}

describe('--runtime-cgroups', () => {
  it('starts on this host, puts the daemon in the cgroup, warns of the missing memory controller, and leaves the shim and the host alone', async (t) => {
    const h = mountV1Hierarchy();
    const daemon = await standIn();
    t.after(async () => {
      await daemon.stop();
      h.close();
    });
    const before = hostDirsOfCgroup();
    const shim = await startShim({
      args: [`--runtime-cgroups=${CGROUP}`, `--test-only-runtime-cgroups-root=${h.root}`, `--test-only-docker-daemon-pids=${daemon.pid}`],
    });
    t.after(() => shim.stop());

    assert.equal(h.cgroupOf(daemon.pid), CGROUP);
    const lines = shim
      .output()
      .split('\n')
      .filter((l) => l.includes('--runtime-cgroups'))
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    assert.ok(lines.some((l) => l.level === 40 && l.msg.startsWith(`--runtime-cgroups: no memory controller among the cgroup hierarchies; ${CGROUP} gets no memory limit`)), JSON.stringify(lines));
    assert.ok(lines.some((l) => l.level === 30 && l.msg === '--runtime-cgroups: moved the Docker daemon into its cgroup'), JSON.stringify(lines));
    // The shim stays where it was started (cri-dockerd does not move itself either).
    assert.equal(fs.readFileSync(`/proc/${shim.child.pid}/cgroup`, 'utf8'), fs.readFileSync('/proc/self/cgroup', 'utf8'));
    assert.deepEqual(hostDirsOfCgroup(), before, `no directory made under ${HOST_ROOT}`);
  });

  it('refuses a relative cgroup path with exit code 2', async () => {
    const res = await runShimToExit(['--runtime-cgroups=system.slice/cri-docker.service']);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /--runtime-cgroups: "system.slice\/cri-docker.service" must be an absolute cgroup path/);
  });
});
