// The scale bench's pure parts: its steps, how many pods still fit, its targets and table, and
// the /proc parsers it adds (MemAvailable, unix sockets, open files, threads).
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { classifyOpenFiles, memAvailableFromMeminfo, tasksFromLoadavg, unixSocketPaths } from '../../../bench/procfs';
import { scalePlanFrom } from '../../../bench/scale';
import { checkScaleTargets, type DockerdIdle, podsThatFit, readTargetMs, renderScaleTable, type ScaleResult, type ScaleStep, scaleSteps } from '../../../bench/scale-report';
import { summarize } from '../../../bench/stats';

describe('scale bench plan', () => {
  it('populates in the usual steps below the count asked for, then to it (a whole number of pods)', () => {
    assert.deepEqual(scaleSteps(1000), [200, 500, 1000]);
    assert.deepEqual(scaleSteps(600), [200, 500, 600]);
    assert.deepEqual(scaleSteps(20), [20]);
    assert.deepEqual(scaleSteps(21), [22]);
    assert.deepEqual(scaleSteps(40, [10, 20]), [10, 20, 40]);
    assert.throws(() => scaleSteps(0), /positive/);
  });

  it('reads its options and refuses unknown ones', () => {
    const plan = scalePlanFrom(['--containers=300', '--steps=100', '--reserve-gib=4', '--loop-seconds=0', '--out=/tmp/x']);
    assert.deepEqual(plan.steps, [100, 300]);
    assert.equal(plan.reserveBytes, 4 * 2 ** 30);
    assert.equal(plan.loopSeconds, 0);
    assert.equal(plan.outDir, '/tmp/x');
    assert.deepEqual(scalePlanFrom([]).steps, [200, 500, 1000]);
    assert.throws(() => scalePlanFrom(['--scale']), /unknown argument/);
    assert.throws(() => scalePlanFrom(['--containers=many']), /--containers/);
  });

  it('fits the pods every headroom allows, and names the one that limits', () => {
    const GiB = 2 ** 30;
    assert.deepEqual(
      podsThatFit([
        { name: 'memory', available: 3 * GiB, reserve: 2 * GiB, perPod: 32 * 2 ** 20 },
        { name: 'threads', available: 10_000, reserve: 3_000, perPod: 25 },
      ]),
      { pods: 32, limitedBy: 'memory' },
    );
    assert.deepEqual(podsThatFit([{ name: 'threads', available: 100, reserve: 3_000, perPod: 25 }]), { pods: 0, limitedBy: 'threads' });
    assert.equal(podsThatFit([]).pods, Number.POSITIVE_INFINITY);
  });
});

describe('scale bench /proc parsers', () => {
  it('reads MemAvailable in bytes', () => {
    assert.equal(memAvailableFromMeminfo('MemTotal:       24576000 kB\nMemFree:  1 kB\nMemAvailable:   2048 kB\n'), 2048 * 1024);
    assert.throws(() => memAvailableFromMeminfo('MemTotal: 1 kB\n'), /no MemAvailable/);
  });

  it("maps unix sockets' inodes to their paths, and counts a process's open files by kind", () => {
    const netUnix = [
      'Num       RefCount Protocol Flags    Type St Inode Path',
      '0000000000000000: 00000002 00000000 00010000 0001 01 1001 /run/docker.sock',
      '0000000000000000: 00000003 00000000 00000000 0001 03 1002 /run/docker.sock',
      '0000000000000000: 00000003 00000000 00000000 0001 03 1003',
      '0000000000000000: 00000003 00000000 00000000 0001 03 1004',
      '0000000000000000: 00000003 00000000 00000000 0001 03 1005 /tmp/cri dir/cri.sock',
    ].join('\n');
    const paths = unixSocketPaths(netUnix);
    assert.equal(paths.get(1001), '/run/docker.sock');
    assert.equal(paths.get(1003), '');
    assert.equal(paths.get(1005), '/tmp/cri dir/cri.sock');
    assert.deepEqual(
      classifyOpenFiles(['/dev/null', 'socket:[1003]', 'socket:[1004]', 'socket:[1005]', 'socket:[9999]', 'anon_inode:inotify', 'anon_inode:[eventpoll]', '/tmp/x/0.log'], paths),
      { fds: 8, sockets: 4, unixUnbound: 2, inotify: 1 },
    );
  });

  it('reads the threads on the machine from /proc/loadavg', () => {
    assert.equal(tasksFromLoadavg('0.52 0.58 0.59 3/1234 56789\n'), 1234);
    assert.throws(() => tasksFromLoadavg('garbage'), /loadavg/);
  });
});

const idle = (cpuMsPer30s: number): DockerdIdle => ({ seconds: 20, cpuMsPer30s, cpuMs: cpuMsPer30s, rssBytes: 100 * 2 ** 20, threads: 40, files: { fds: 100, sockets: 20, unixUnbound: 0, inotify: 3 } });

function step(containers: number, fast: boolean): ScaleStep {
  const t = (ms: number): ReturnType<typeof summarize> => summarize([ms, ms]);
  const read = (call: string, ms: number, raw: number | null): ScaleStep['reads'][number] => ({ call, rawCall: 'x', shim: t(ms), raw: raw === null ? null : t(raw) });
  return {
    containers,
    pods: containers / 2,
    docker: { all: containers + 3, shimLabelled: containers, running: containers },
    memAvailableBytes: 10 * 2 ** 30,
    reads: [
      read('ListPodSandbox', fast ? 4 : 12, 30),
      read('ListContainers (pod_sandbox_id)', 1, 2),
      read('ContainerStatus', fast ? 0.8 : 2.5, 0.6),
      read('ListContainerStats', fast ? 60 : 140, null),
      read('ListPodSandboxMetrics', 300, null),
      read('ListImages', 1, 1),
    ],
    cpuPerCall: [{ rpc: 'Version', calls: 20, cpuMsPerCall: 0.3 }],
    shim: { rssBytes: (fast ? 120 : 160) * 2 ** 20, afterCallsBytes: 190 * 2 ** 20, peakBytes: 170 * 2 ** 20, files: { fds: 600, sockets: 510, unixUnbound: 502, inotify: 0 } },
    kubeletLoop: { pods: containers / 2, seconds: 30, shim: { loopCpuMs: 500, idleCpuMs: 50, netCpuMs: 450 }, dockerd: { loopCpuMs: 100, idleCpuMs: 90, netCpuMs: 10 }, nodeNetCpuMsPer30s: fast ? 460 : 1200 },
    logStreams: { withShim: idle(900), withoutShim: idle(300) },
    startup: { runs: 2, version: t(fast ? 250 : 700), listContainers: t(fast ? 400 : 900) },
  };
}

describe('scale bench targets and table', () => {
  it('judges lists, status calls and ListContainerStats against their limits, and not the others', () => {
    assert.equal(readTargetMs('ListPodSandbox (state=ready)'), 10);
    assert.equal(readTargetMs('ListContainers (state=running, label selector)'), 10);
    assert.equal(readTargetMs('PodSandboxStatus'), 2);
    assert.equal(readTargetMs('ListContainerStats'), 100);
    assert.equal(readTargetMs('ListPodSandboxMetrics'), undefined);
    assert.equal(readTargetMs('ImageFsInfo'), undefined);
  });

  it('checks every target at every step', () => {
    const checks = checkScaleTargets([step(200, true), step(1000, false)]);
    const at200 = checks.filter((c) => c.target.includes('at 200 containers'));
    const at1000 = checks.filter((c) => c.target.includes('at 1000 containers'));
    // 4 judged reads, RSS, 2 start-up answers, the loop.
    assert.equal(at200.length, 8);
    assert.equal(at1000.length, 8);
    assert.ok(at200.every((c) => c.pass));
    assert.deepEqual(
      at1000.filter((c) => !c.pass).map((c) => c.target.split(' at ')[0]),
      ['ListPodSandbox', 'ContainerStatus', 'ListContainerStats', "shim RSS under kubelet's loop", 'exec -> first Version answer', 'exec -> first ListContainers answer', "node CPU (shim + dockerd) under kubelet's polling"],
    );
    assert.ok(at1000.find((c) => c.target.startsWith('ListContainers (pod_sandbox_id)'))!.pass);
  });

  it('renders a column per step, each figure with its verdict next to its target', () => {
    const steps = [step(200, true), step(1000, false)];
    const result = { steps } as unknown as ScaleResult;
    const table = renderScaleTable(result);
    const lines = table.split('\n');
    assert.equal(lines[0], '| figure | target | @200 | @1000 |');
    assert.ok(lines.includes('| ListPodSandbox p50 ms (raw Docker p50) | <= 10 | 4.00 PASS (30.00) | 12.00 MISS (30.00) |'));
    assert.ok(lines.includes('| ListPodSandboxMetrics p50 ms (raw Docker p50) |  | 300.00 | 300.00 |'));
    assert.ok(lines.includes("| shim RSS MiB under kubelet's loop (right after the per-call reads; peak) | <= 150 | 120.0 PASS (190.0; 170.0) | 160.0 MISS (190.0; 170.0) |"));
    assert.ok(lines.includes('| dockerd idle, shim running (log streams open): CPU ms per 30 s (median slot / mean) |  | 900 / 1350 | 900 / 1350 |'));
    assert.ok(lines.some((l) => l.startsWith('| kubelet loop: node CPU ms per 30 s | <= 1000 | 460 PASS | 1200 MISS |')));
  });
});
