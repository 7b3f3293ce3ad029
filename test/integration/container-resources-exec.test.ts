// Resources seen in the container's cgroup files, their update, and ExecSync.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { status as Code } from '@grpc/grpc-js';
import { describe, it } from 'node:test';
import { criContract } from '../../src/cri/contract';
import type { ExecSyncResponse__Output } from '../../src/cri/types';
import { rejectsWith } from '../support/client';
import { waitFor } from '../support/poll';
import { useShim } from '../support/fixture';
import { busybox, removePodCgroups, runContainer, sh, SLEEP_FOREVER, waitExited } from '../support/pods';

const MiB = 1024 * 1024;

describe('container resources and ExecSync', () => {
  const f = useShim({ pod: (run) => ({ name: 'res', linux: { cgroupParent: `/cds-test-${run}` } }) });
  const { run } = f;
  const cgroupParent = `/cds-test-${run}`;
  // Docker made the pod's parent cgroup in each controller; it is empty once the containers are gone.
  f.onCleanUp(() => removePodCgroups(cgroupParent));

  it('puts limits in the cgroup files, under the pod cgroup parent, and updates them', async () => {
    const id = await runContainer(f.client, f.pod, busybox(run, 'limits', {
      ...SLEEP_FOREVER,
      linux: { resources: { cpuPeriod: 100000, cpuQuota: 50000, cpuShares: 512, memoryLimitInBytes: 64 * MiB, cpusetCpus: '0', oomScoreAdj: 500 } },
    }));
    const read = async (file: string) => (await sh(f.client, id, `cat ${file}`)).trim();
    assert.match(await read('/proc/self/cgroup'), new RegExp(`:cpu[^:]*:${cgroupParent}/${id}`));
    assert.equal(await read('/sys/fs/cgroup/cpu/cpu.cfs_period_us'), '100000');
    assert.equal(await read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us'), '50000');
    assert.equal(await read('/sys/fs/cgroup/cpu/cpu.shares'), '512');
    assert.equal(await read('/sys/fs/cgroup/memory/memory.limit_in_bytes'), String(64 * MiB));
    assert.equal(await read('/sys/fs/cgroup/cpuset/cpuset.cpus'), '0');
    assert.equal(await read('/proc/self/oom_score_adj'), '500');
    const swapFile = await f.client.runtime.ExecSync({ containerId: id, cmd: ['cat', '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes'], timeout: 10 });
    if (swapFile.exitCode === 0) assert.equal(swapFile.stdout.toString().trim(), String(64 * MiB), 'no swap beyond the memory limit');

    const c = f.client.runtime;
    await c.UpdateContainerResources({ containerId: id, linux: { cpuPeriod: 100000, cpuQuota: 20000, cpuShares: 256, memoryLimitInBytes: 128 * MiB, oomScoreAdj: 500 } });
    assert.equal(await read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us'), '20000');
    assert.equal(await read('/sys/fs/cgroup/cpu/cpu.shares'), '256');
    assert.equal(await read('/sys/fs/cgroup/memory/memory.limit_in_bytes'), String(128 * MiB));
    const { status } = await c.ContainerStatus({ containerId: id });
    assert.equal(status!.resources!.linux!.cpuQuota, '20000');
    assert.equal(status!.resources!.linux!.memoryLimitInBytes, String(128 * MiB));

    await assert.rejects(c.UpdateContainerResources({ containerId: id, linux: { oomScoreAdj: 100 } }), rejectsWith(Code.UNIMPLEMENTED, /oom_score_adj/));
    await assert.rejects(
      c.UpdateContainerResources({ containerId: id, linux: { oomScoreAdj: 500, hugepageLimits: [{ pageSize: '2MB', limit: 2 * MiB }] } }),
      rejectsWith(Code.UNIMPLEMENTED, /hugepage/),
    );
    await assert.rejects(c.UpdateContainerResources({ containerId: id }), rejectsWith(Code.INVALID_ARGUMENT, /linux is required/));
  });

  it('runs a command and returns stdout, stderr and the exit code', async () => {
    const id = await runContainer(f.client, f.pod, busybox(run, 'exec', SLEEP_FOREVER));
    const res = await f.client.runtime.ExecSync({ containerId: id, cmd: ['sh', '-c', 'echo out; echo err >&2; exit 7'], timeout: 10 });
    assert.deepEqual([res.stdout.toString(), res.stderr.toString(), res.exitCode], ['out\n', 'err\n', 7]);
    await assert.rejects(f.client.runtime.ExecSync({ containerId: id, cmd: [], timeout: 10 }), rejectsWith(Code.INVALID_ARGUMENT, /cmd is required/));
  });

  it('kills the command when its timeout expires', async () => {
    const id = await runContainer(f.client, f.pod, busybox(run, 'exectimeout', SLEEP_FOREVER));
    await assert.rejects(
      f.client.runtime.ExecSync({ containerId: id, cmd: ['sleep', '4242'], timeout: 1 }),
      rejectsWith(Code.DEADLINE_EXCEEDED, /timed out after 1s/),
    );
    await waitFor('the timed-out command to be gone', async () => !(await sh(f.client, id, 'ps -o args')).includes('sleep 4242'), { timeoutMs: 10_000 });
  });

  it('caps the output so the answer fits in 16 MiB, and says so', async () => {
    const id = await runContainer(f.client, f.pod, busybox(run, 'execbig', SLEEP_FOREVER));
    // A client that accepts what kubelet would (the default client stops at 4 MiB).
    const v1 = criContract().runtime.v1;
    const big = new v1.RuntimeService(f.shim.address, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': 64 * MiB });
    try {
      const res = await new Promise<ExecSyncResponse__Output>((resolve, reject) =>
        big.ExecSync({ containerId: id, cmd: ['head', '-c', String(17 * MiB), '/dev/zero'], timeout: 30 }, (err, r) => (err ? reject(err) : resolve(r!))),
      );
      assert.equal(res.exitCode, 0);
      assert.equal(res.stdout.length, 16 * MiB - 64 * 1024);
      assert.match(res.stderr.toString(), new RegExp(`${MiB + 64 * 1024} bytes of stdout were dropped`));
    } finally {
      big.close();
    }
  });

  it('refuses ExecSync and ReopenContainerLog on a stopped container', async () => {
    const id = await runContainer(f.client, f.pod, busybox(run, 'stopped', { command: ['true'] }));
    await waitExited(f.client, id);
    await assert.rejects(f.client.runtime.ExecSync({ containerId: id, cmd: ['true'], timeout: 5 }), rejectsWith(Code.FAILED_PRECONDITION, /not running/));
    await assert.rejects(f.client.runtime.ReopenContainerLog({ containerId: id }), rejectsWith(Code.FAILED_PRECONDITION, /not running/));
  });
});
