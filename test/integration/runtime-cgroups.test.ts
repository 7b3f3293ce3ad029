// The shim started with --runtime-cgroups as a kubelet node's unit starts it, on this cgroup v1
// host: it starts (before, a new cpuset cgroup's ENOSPC ended it), warns of what it cannot do,
// and sets the Docker daemon's OOM score. The daemon is a process of the test and the cgroup
// root a directory with no hierarchy mounted (the tests-only flags), as no test moves the host's
// dockerd or any process between the host's cgroups, nor mounts a v1 hierarchy of its own
// (./support/daemon-stand-in.ts says why); the code path is the shim's own otherwise. Where the
// daemon is put is tested over fake trees (test/unit/cgroups/runtime-cgroups.test.ts) and for
// real in the cgroup v2 lane (test/cgroup2/).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { runShimToExit, startShim } from '../support/shim';
import { standIn } from '../support/daemon-stand-in';
import { tempDir } from '../support/temp';

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
  it('starts on this host with no hierarchy it may use, warns so, sets the daemon\'s OOM score, and leaves the shim and the host alone', async (t) => {
    const root = tempDir('no-hierarchy');
    const daemon = await standIn();
    t.after(() => daemon.stop());
    const before = hostDirsOfCgroup();
    const shim = await startShim({
      args: [`--runtime-cgroups=${CGROUP}`, `--test-only-runtime-cgroups-root=${root}`, `--test-only-docker-daemon-pids=${daemon.pid}`],
    });
    t.after(() => shim.stop());

    assert.equal((await shim.client.runtime.Version({})).runtimeName, 'docker');
    const lines = shim
      .output()
      .split('\n')
      .filter((l) => l.includes('--runtime-cgroups'))
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    assert.ok(lines.some((l) => l.level === 40 && l.msg.includes(`no cgroup hierarchy is mounted under ${root}`)), JSON.stringify(lines));
    // -999, or this kernel's refusal (it withholds CAP_SYS_RESOURCE here) said as a warning.
    const score = fs.readFileSync(`/proc/${daemon.pid}/oom_score_adj`, 'utf8').trim();
    assert.ok(score === '-999' || lines.some((l) => l.level === 40 && /oom_score_adj/.test(l.msg) && /CAP_SYS_RESOURCE/.test(l.msg)), `${score} ${JSON.stringify(lines)}`);
    // The shim stays where it was started (cri-dockerd does not move itself either).
    assert.equal(fs.readFileSync(`/proc/${shim.child.pid}/cgroup`, 'utf8'), fs.readFileSync('/proc/self/cgroup', 'utf8'));
    assert.deepEqual(hostDirsOfCgroup(), before, `no directory made under ${HOST_ROOT}`);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('refuses a relative cgroup path with exit code 2', async () => {
    const res = await runShimToExit(['--runtime-cgroups=system.slice/cri-docker.service']);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /--runtime-cgroups: "system.slice\/cri-docker.service" must be an absolute cgroup path/);
  });
});
