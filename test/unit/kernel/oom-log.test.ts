// The kernel log as a witness of OOM kills: its oom-kill records, read into container IDs.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { KernelOomLog, kmsgSource, oomKilledContainerOf } from '../../../src/kernel/oom-log';
import { silentLogger } from '../../../src/util/logger';

const ID = '1236373858ec37ee65011737698854afb98b2668a0ecf550e6a26b98cf9757bc';
/** As /dev/kmsg gives it (seen here, Linux 6.18, a cgroupfs-driven Docker). */
const RECORD = `6,12331,3103050223,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=${ID},mems_allowed=0,oom_memcg=/docker/${ID},task_memcg=/docker/${ID},task=sh,pid=7621,uid=0\n`;

describe('the kernel log as an OOM witness', () => {
  it('reads the container from an oom-kill record, for either cgroup driver and a pod\'s cgroup', () => {
    assert.equal(oomKilledContainerOf(RECORD), ID);
    assert.equal(oomKilledContainerOf(`6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,task_memcg=/system.slice/docker-${ID}.scope,task=sh,pid=1,uid=0`), ID);
    assert.equal(oomKilledContainerOf(`6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,task_memcg=/kubepods/burstable/pod1234/${ID},task=sh`), ID);
    assert.equal(oomKilledContainerOf(`6,1,2,-;Memory cgroup out of memory: Killed process 7621 (sh) ${ID}`), undefined, 'only oom-kill records');
    assert.equal(oomKilledContainerOf('6,1,2,-;oom-kill:constraint=CONSTRAINT_NONE,task_memcg=/,task=sh'), undefined, 'a kill outside any container');
    assert.equal(oomKilledContainerOf(`6,1,2,-;oom-kill:oom_memcg=/docker/${ID},task_memcg=/user.slice,task=sh`), undefined, 'the task\'s cgroup, not the limit\'s');
  });

  it('remembers what it read and reads only what came since', () => {
    const batches = [['6,1,2,-;hello\n', RECORD], [], [`6,3,4,-;oom-kill:task_memcg=/docker/${'b'.repeat(64)},task=x`]];
    let reads = 0;
    const oom = new KernelOomLog({ read: () => batches[reads++] ?? [] });
    assert.equal(oom.killedIn(ID), true);
    assert.equal(oom.killedIn('b'.repeat(64)), false, 'not logged yet');
    assert.equal(oom.killedIn('b'.repeat(64)), true);
    assert.equal(oom.killedIn(ID), true, 'still remembered');
    assert.equal(reads, 4);
  });

  it('gives nothing, once said, where the device cannot be read', () => {
    const said: string[] = [];
    const log = { ...silentLogger(), info: (_o: unknown, msg: string) => said.push(msg) } as unknown as ReturnType<typeof silentLogger>;
    const source = kmsgSource(log, '/nonexistent/kmsg');
    assert.deepEqual(source.read(), []);
    assert.deepEqual(source.read(), []);
    assert.equal(said.length, 1);
  });
});
