// --runtime-cgroups against the kernel's cgroup v1 rules, in a hierarchy the test mounts itself
// (test/support/v1-hierarchy.ts): a named one without controllers, so no process moves in any of
// the host's hierarchies. The processes moved are the test's own, standing in for dockerd.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { memoryLimitFor, RuntimeCgroups } from '../../../src/cgroups/runtime-cgroups';
import { recordingLogger } from '../../support/recording-logger';
import { mountV1Hierarchy, standIn, zombie } from '../../support/v1-hierarchy';

const CGROUP = '/system.slice/cri-docker.service';

describe('--runtime-cgroups in a v1 hierarchy of the test', () => {
  it('moves the daemon in, warns of the missing memory controller, and puts it back at the next check', async (t) => {
    const h = mountV1Hierarchy();
    const daemon = await standIn();
    t.after(async () => {
      await daemon.stop();
      h.close();
    });
    const { log, lines } = recordingLogger('debug');
    const runtime = RuntimeCgroups.create({ cgroup: CGROUP, log, root: h.root, daemonPids: [daemon.pid] });

    const first = runtime.check();
    assert.equal(h.cgroupOf(daemon.pid), CGROUP);
    assert.deepEqual(first.moved, [{ pid: daemon.pid, dir: path.join(h.mountPoint, CGROUP) }]);
    const limit = memoryLimitFor(fs.readFileSync('/proc/meminfo', 'utf8'));
    assert.ok(first.warnings.includes(`no memory controller among the cgroup hierarchies; ${CGROUP} gets no memory limit (${limit} bytes)`), first.warnings.join('\n'));
    assert.ok(lines().some((l) => l.level === 40 && l.msg.startsWith('--runtime-cgroups: no memory controller')));
    // The score: set, or refused by a kernel that withholds CAP_SYS_RESOURCE, and said so.
    const score = fs.readFileSync(`/proc/${daemon.pid}/oom_score_adj`, 'utf8').trim();
    if (score !== '-999') assert.ok(first.warnings.some((w) => w.includes('oom_score_adj -999') && w.includes('CAP_SYS_RESOURCE')), first.warnings.join('\n'));

    // In place: nothing to do.
    assert.deepEqual(runtime.check().moved, []);
    // Moved out (as a restarted service's new process starts outside): the next check puts it back.
    fs.writeFileSync(path.join(h.mountPoint, 'cgroup.procs'), String(daemon.pid));
    assert.equal(h.cgroupOf(daemon.pid), '/');
    assert.equal(runtime.check().moved.length, 1);
    assert.equal(h.cgroupOf(daemon.pid), CGROUP);
  });

  it('removes the directories it made when no process could be put in them', async (t) => {
    const h = mountV1Hierarchy();
    const exiting = await zombie();
    t.after(async () => {
      await exiting.stop();
      h.close();
    });
    const { log } = recordingLogger('debug');
    const report = RuntimeCgroups.create({ cgroup: CGROUP, log, root: h.root, daemonPids: [exiting.pid] }).check();
    const dir = path.join(h.mountPoint, CGROUP);
    assert.ok(report.warnings.includes(`dockerd (PID ${exiting.pid}) is not in ${dir} (the name=${h.name} hierarchy) after being written there: it is exiting or gone`), report.warnings.join('\n'));
    assert.deepEqual(report.moved, []);
    assert.deepEqual(report.removed, [dir, path.dirname(dir)]);
    assert.equal(fs.existsSync(path.join(h.mountPoint, 'system.slice')), false);
  });

  it('leaves a cgroup it did not make in place when it cannot use it', async (t) => {
    const h = mountV1Hierarchy();
    const exiting = await zombie();
    t.after(async () => {
      await exiting.stop();
      h.close();
    });
    fs.mkdirSync(path.join(h.mountPoint, 'system.slice'));
    const { log } = recordingLogger('debug');
    const report = RuntimeCgroups.create({ cgroup: CGROUP, log, root: h.root, daemonPids: [exiting.pid] }).check();
    assert.deepEqual(report.removed, [path.join(h.mountPoint, CGROUP)]);
    assert.equal(fs.existsSync(path.join(h.mountPoint, 'system.slice')), true);
  });
});
