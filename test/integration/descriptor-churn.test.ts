// The shim's descriptors on a churning node: pods come, are read (stats, exec) and go, and the
// shim must end where it started, not hold the cgroup files of containers Docker removed (a
// removed cgroup whose file is held open stays pinned in the kernel). The stats keep a
// container's cgroup files open between calls, and the storage figures read its CPU time;
// those files are closed when Docker says the container stopped, not at some later read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { descriptorTargets } from '../../bench/procfs';
import { useShim } from '../support/fixture';
import { SLEEP_FOREVER } from '../support/pods';
import { waitFor } from '../support/poll';

/** Pods through the loop: enough that a leak of a few descriptors per pod stands out. */
const PODS = 25;
/** What the count may grow by: a connection to Docker more, the log followers' inotify instance. */
const MARGIN = 10;

describe('descriptors on a churning node', () => {
  const f = useShim();

  it(`come back to where they were after ${PODS} pods were run, read, stopped and removed`, async () => {
    const pid = f.shim.child.pid!;
    const gone = new Set<string>();
    const mine = new Set<string>();
    // The storage figures read the CPU time of every running container of any shim on this
    // Docker (other suites' too): files in those containers' cgroups are left out of the count.
    const foreign = (d: string): boolean => d.startsWith('/sys/fs/cgroup/') && ![...mine].some((id) => d.includes(id));
    const descriptors = (p: number): string[] => descriptorTargets(p).filter((d) => !foreign(d));
    /** One pod through what kubelet does with it; its pause and container IDs. */
    const cycle = async (n: number): Promise<void> => {
      const pod = await f.startPod(`fd-${n}`);
      mine.add(pod.id);
      const id = await f.runContainer('app', SLEEP_FOREVER, pod);
      mine.add(id);
      const rt = f.client.runtime;
      await rt.ContainerStats({ containerId: id });
      await rt.ListContainerStats({});
      await rt.PodSandboxStats({ podSandboxId: pod.id });
      await rt.ListPodSandboxStats({});
      const exec = await rt.ExecSync({ containerId: id, cmd: ['true'], timeout: 10 });
      assert.equal(exec.exitCode, 0);
      await rt.StopPodSandbox({ podSandboxId: pod.id });
      // Stopped, not removed yet: its cgroups are gone, and so must be the files held in them.
      await waitFor(`the shim to close the files of stopped pod ${n}`, () => !descriptors(pid).some((d) => d.includes(id) || d.includes(pod.id)), {
        timeoutMs: 10_000,
        explain: () => descriptors(pid).filter((d) => d.includes(id) || d.includes(pod.id)).join('\n'),
      });
      await f.removePod(pod);
      gone.add(pod.id).add(id);
    };

    // One pod first: what the first pod opens for good (a connection to Docker, the log
    // followers' inotify instance) is in the count before.
    await cycle(0);
    const before = descriptors(pid);
    const started = Date.now();
    for (let n = 1; n <= PODS; n++) await cycle(n);
    const seconds = (Date.now() - started) / 1000;
    const held = (): string[] => descriptors(pid).filter((d) => [...gone].some((id) => d.includes(id)));
    const after = await waitFor('the descriptor count to come back', () => {
      const now = descriptors(pid);
      return now.length <= before.length + MARGIN && held().length === 0 ? now : undefined;
    }, { timeoutMs: 10_000, explain: () => `before ${before.length}, now ${descriptors(pid).length}; held in removed containers:\n${held().slice(0, 20).join('\n')}` });
    console.log(`descriptors: ${before.length} before, ${after.length} after ${PODS} pods (${seconds.toFixed(1)} s)`);
    assert.ok(after.length <= before.length + MARGIN);
  });
});
