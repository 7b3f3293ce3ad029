// The benchmark runs: `node dist/bench/run.js --quick` against the real Docker finishes, writes
// a JSON result with every section filled with numbers (the start-up part included), and
// leaves nothing behind. It asserts
// no timings: the figures are the benchmark's business, not a test's.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import type { BenchResult, LatencyRow } from '../../bench/report';
import { LIFECYCLE_CALLS } from '../../bench/lifecycle';
import { READ_CALLS } from '../../bench/reads';
import { nodeBootVariables } from '../../bench/startup';
import { removeTestContainers, TEST_LABEL } from '../support/cleanup';
import { useShim } from '../support/fixture';
import { dockerApi } from '../support/images';

const RUN_JS = path.resolve(__dirname, '../../bench/run.js');

function runBench(args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUN_JS, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGINT');
      reject(new Error(`the quick benchmark did not finish within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function assertNumber(value: unknown, what: string): void {
  assert.equal(typeof value, 'number', `${what} is not a number: ${JSON.stringify(value)}`);
  assert.ok(Number.isFinite(value as number) && (value as number) >= 0, `${what} is ${value}`);
}

function assertLatencyRow(row: LatencyRow, where: string): void {
  for (const side of ['shim', 'raw'] as const) {
    assert.ok(row[side].n > 0, `${where} ${row.call}: no ${side} samples`);
    for (const key of ['p50', 'p95', 'mean'] as const) assertNumber(row[side][key], `${where} ${row.call} ${side}.${key}`);
  }
  assertNumber(row.ratioP50, `${where} ${row.call} ratio`);
  assert.ok(row.rawCall.length > 0, `${where} ${row.call}: the raw call is not named`);
}

describe('the benchmark (--quick)', () => {
  const f = useShim({ shim: false });
  const out = f.tempDir('bench-out');
  let result: BenchResult;
  let stdout: string;
  // The benchmark removes what it made; this only matters if it was killed half-way.
  f.onCleanUp(() => result && removeTestContainers({ run: result.meta.run }));

  before(async () => {
    const ran = await runBench(['--quick', `--out=${out}`], 300_000);
    assert.equal(ran.code, 0, `the benchmark failed:\n${ran.stderr}`);
    stdout = ran.stdout;
    result = JSON.parse(fs.readFileSync(path.join(out, 'latest.json'), 'utf8')) as BenchResult;
  });

  it('describes the engine and the machine', () => {
    assert.equal(result.meta.mode, 'quick');
    assert.match(result.meta.docker.version, /^\d+\.\d+/);
    assert.match(result.meta.docker.apiVersion, /^1\.\d+$/);
    assert.ok(result.meta.machine.cores > 0);
    assertNumber(result.meta.machine.memoryBytes, 'memory');
    assert.match(result.meta.node, /^v\d+/);
    assert.ok(!Number.isNaN(Date.parse(result.meta.date)));
    const dated = fs.readdirSync(out).filter((f) => f !== 'latest.json' && f.endsWith('.json'));
    assert.equal(dated.length, 1, 'a dated copy is written next to latest.json');
  });

  it('times every lifecycle call on both sides', () => {
    assert.deepEqual(
      result.lifecycle.map((r) => r.call),
      [...LIFECYCLE_CALLS],
    );
    for (const row of result.lifecycle) {
      assertLatencyRow(row, 'lifecycle');
      assert.equal(row.shim.n, result.meta.lifecycleRounds);
    }
  });

  it('times the raw requests relayed by the bare grpc-js floor, every call but ExecSync', () => {
    assert.deepEqual(
      result.lifecycleFloor?.map((r) => r.call),
      LIFECYCLE_CALLS.filter((c) => c !== 'ExecSync'),
    );
    for (const row of result.lifecycleFloor ?? []) {
      assertLatencyRow(row, 'lifecycle floor');
      assert.equal(row.shim.n, result.meta.lifecycleRounds);
    }
    assert.match(stdout, /\| lifecycle floor \| RemoveContainer \|/);
  });

  it('times pod network set-up and tear-down on cni next to Docker’s bridge', () => {
    assert.deepEqual(
      result.network.map((r) => r.call.split(' ')[0]),
      ['RunPodSandbox', 'StopPodSandbox'],
    );
    for (const row of result.network) {
      assertLatencyRow(row, 'pod network');
      assert.equal(row.shim.n, result.meta.lifecycleRounds);
      assert.match(row.call, /on cni/);
      assert.match(row.rawCall, /on Docker's bridge/);
    }
  });

  it('times every read call at 0 and 10 containers', () => {
    assert.deepEqual(
      result.reads.map((l) => l.containers),
      [0, 10],
    );
    const [empty, ten] = result.reads as [BenchResult['reads'][0], BenchResult['reads'][0]];
    // With no pod there is nothing to ask the status of; everything else is measured.
    assert.deepEqual(
      empty.rows.map((r) => r.call),
      READ_CALLS.filter((c) => !c.needsPod).map((c) => c.name),
    );
    assert.deepEqual(
      ten.rows.map((r) => r.call),
      READ_CALLS.map((c) => c.name),
    );
    for (const level of result.reads) {
      for (const row of level.rows) assertLatencyRow(row, `reads @${level.containers}`);
      assert.ok(level.docker.running >= level.containers, `Docker ran ${level.docker.running} containers at level ${level.containers}`);
    }
  });

  it('measures CPU in the polling loop and the shim RSS', () => {
    const p = result.polling;
    assert.equal(p.containers, 10);
    for (const [k, v] of Object.entries(p.dockerdCpuMs)) assertNumber(v, `dockerdCpuMs.${k}`);
    for (const [k, v] of Object.entries(p.dockerdCpuNetMs)) assertNumber(v, `dockerdCpuNetMs.${k}`);
    assertNumber(p.shimCpuMs, 'shimCpuMs');
    assert.ok(p.tickMs.shim.n > 0 && p.tickMs.raw.n > 0, 'the loop ticked on both sides');
    // The raw tick is 2 lists + images/json + 10 inspects, seen through the counter.
    assert.equal(p.dockerRequests.raw.perTick, 13);
    assert.equal(p.dockerRequests.raw.byEndpoint['GET /containers/<id>/json'], 10 * p.dockerRequests.ticks);
    assertNumber(p.dockerRequests.shim.perTick, 'shim requests per tick');
    assert.ok(result.rss.idleBytes > 0 && result.rss.afterBytes > 0 && result.rss.peakBytes >= result.rss.afterBytes);
  });

  it('measures the shim\'s CPU per call at each level and under a kubelet-like loop', () => {
    const [empty, ten] = result.reads as [BenchResult['reads'][0], BenchResult['reads'][0]];
    // Status calls need a pod: at 0 containers they are not measured.
    assert.deepEqual(
      empty.cpuPerCall.map((c) => c.rpc),
      ['Version', 'ListPodSandbox', 'ListContainers', 'ListContainerStats', 'ListPodSandboxStats', 'ImageFsInfo', 'ListImages', 'Status', 'ListPodSandboxMetrics'],
    );
    assert.deepEqual(
      ten.cpuPerCall.map((c) => c.rpc),
      ['Version', 'ListPodSandbox', 'ListContainers', 'PodSandboxStatus', 'ContainerStatus', 'ListContainerStats', 'ListPodSandboxStats', 'ImageFsInfo', 'ListImages', 'Status', 'ListPodSandboxMetrics'],
    );
    for (const c of [...empty.cpuPerCall, ...ten.cpuPerCall]) assertNumber(c.cpuMsPerCall, `CPU per call of ${c.rpc}`);
    const k = result.kubeletLoop;
    assert.equal(k.pods, 5);
    assert.equal(k.seconds, 3);
    for (const side of ['shim', 'dockerd'] as const) {
      for (const key of ['loopCpuMs', 'idleCpuMs', 'netCpuMs'] as const) assertNumber(k[side][key], `kubeletLoop.${side}.${key}`);
    }
    assertNumber(k.nodeNetCpuMsPer30s, 'kubeletLoop.nodeNetCpuMsPer30s');
    // The same loop against the bare grpc-js server with the shim's answers kept.
    const f = result.kubeletLoopFloor;
    assert.ok(f, 'the kubelet loop has a floor');
    assert.equal(f.pods, 5);
    assert.equal(f.seconds, 3);
    for (const key of ['loopCpuMs', 'idleCpuMs', 'netCpuMs'] as const) assertNumber(f.shim[key], `kubeletLoopFloor.shim.${key}`);
    assert.ok(f.shim.loopCpuMs > 0, 'the floor server spent CPU answering the loop');
    assert.ok(f.rssBytes > 10 * 2 ** 20, `the floor process's RSS, ${f.rssBytes} bytes`);
    assert.ok(f.collectedRssBytes !== undefined && f.collectedRssBytes > 10 * 2 ** 20, `the floor process's RSS after a collection, ${f.collectedRssBytes} bytes`);
    assert.match(stdout, /\| kubelet loop floor 3 s @5 pods \|.*; RSS [\d.]+ MiB \([\d.]+ MiB\) \|/);
  });

  it('times a restarted shim from exec to its first Version and ListContainers answers', () => {
    const st = result.startup;
    assert.equal(st.containers, 10);
    assert.equal(st.runs, 3);
    assert.ok(st.docker.running >= st.containers, `Docker ran ${st.docker.running} containers`);
    for (const [what, times] of Object.entries(st.shim)) {
      assert.equal(times.n, st.runs, `${what}: one sample per run`);
      for (const key of ['p50', 'p95', 'mean', 'max'] as const) assertNumber(times[key], `startup ${what}.${key}`);
      assert.ok(times.p50 > 0 && times.max >= times.p50, `startup ${what}: p50 ${times.p50}, max ${times.max}`);
    }
    assert.equal(st.baseline, undefined, 'no baseline build was given');
    for (const call of ['Version', 'ListContainers']) {
      assert.match(stdout, new RegExp(`^\\| startup @10 \\| exec -> first ${call} answer, ms p50 / max \\(3 runs; this build, a service's environment\\) \\| target: p50 <= 300 \\| [\\d.]+ / [\\d.]+ \\|`, 'm'));
      assert.ok(result.targets.some((t) => t.target === `exec -> first ${call} answer at 10 containers, in a service's environment: p50 <= 300 ms`), call);
    }
    // The bench's own environment is timed too when it holds a variable Node acts on at boot.
    const bootVariables = nodeBootVariables();
    if (bootVariables.length === 0) assert.equal(st.shellEnvironment, undefined);
    else {
      assert.equal(st.shellEnvironment?.label, `this build, with the bench's ${bootVariables.join(', ')}`);
      assert.equal(st.shellEnvironment?.version.n, st.runs);
      assert.match(stdout, /^\| startup @10 \| exec -> first Version answer, ms p50 \/ max \(3 runs; this build, with the bench's /m);
    }
  });

  it('measures exec stdout and stdin and a port forward over SPDY and WebSocket next to the docker CLI, in numbers', () => {
    const rows = result.streams?.rows ?? [];
    assert.deepEqual(
      rows.map((r) => `${r.case} ${r.transport}`),
      ['exec stdout SPDY', 'exec stdout WebSocket', 'exec stdin SPDY', 'exec stdin WebSocket', 'port forward SPDY', 'port forward WebSocket'],
    );
    for (const r of rows) {
      for (const value of [r.shim.mibPerSecond, r.shim.shimCpuSecondsPerGiB, r.raw.mibPerSecond, r.ratio]) assertNumber(value, `streams ${r.case} ${r.transport}`);
    }
  });

  it('measures exec stdin through the bare Node relay too (its floor), in numbers, and prints its row', () => {
    const floor = result.streams?.floor ?? [];
    assert.deepEqual(
      floor.map((f) => f.case),
      ['exec stdin'],
    );
    for (const f of floor) {
      for (const [what, value] of Object.entries({ mibPerSecond: f.floor.mibPerSecond, relayCpuSecondsPerGiB: f.floor.relayCpuSecondsPerGiB, dockerdCpuSecondsPerGiB: f.floor.dockerdCpuSecondsPerGiB, raw: f.raw.mibPerSecond, ratio: f.ratio })) {
        assertNumber(value, `streams floor ${what}`);
      }
      assert.ok(f.floor.mibPerSecond > 0, 'the floor moved bytes');
    }
    assert.match(stdout, /^\| streams \| exec stdin \d+ MiB floor \(bare Node relay\) .*\| [\d.]+; [\d.]+; [\d.]+\/[\d.]+.* \| \| [\d.]+ \| \| \d\.\d\d \|$/m);
  });

  it('checks every target and prints the table with PASS or MISS for each', () => {
    // Lifecycle and read ratios, dockerd CPU and RSS, two start-up calls, the three stats lists'
    // own p50, ImageFsInfo's p50 and CPU per call, the node's CPU under the kubelet loop,
    // throughput and CPU per GiB of the three streams on two transports, and the idle part's CPU
    // and timer-driven runs (no bursts in the quick run; its RSS is a figure, not a target).
    assert.equal(result.targets.length, LIFECYCLE_CALLS.length + READ_CALLS.length + 2 + 2 + 3 + 2 + 1 + 3 * 2 * 2 + 2);
    assert.equal(result.idle?.pods, 10);
    assert.ok(result.targets.some((t) => t.target.startsWith('idle shim CPU at 10 pods, no calls, on a store of >= 100000 files: <= 10 ms per 30 s')));
    assert.ok(result.targets.some((t) => t.target === 'timer-driven runs in the idle window: 0'), 'the run census was read');
    for (const [call, ms] of [['ListContainerStats', 25], ['ListPodSandboxStats', 40], ['ListPodSandboxMetrics', 60]] as const) {
      assert.ok(result.targets.some((t) => t.target === `${call} at 10 containers: p50 <= ${ms} ms`), call);
    }
    assert.ok(result.targets.some((t) => t.target.startsWith("node CPU (shim + dockerd) under kubelet's polling at 5 pods")));
    assert.ok(result.targets.some((t) => t.target.startsWith(`ImageFsInfo at 10 containers on a store of ${result.imageStore.files} files`)));
    assert.ok(result.imageStore.files > 0, 'the store was counted');
    for (const t of result.targets) assert.equal(typeof t.pass, 'boolean', t.target);
    assert.match(stdout, /^\| part \| call \|/m);
    assert.equal((stdout.match(/^(PASS|MISS) {2}/gm) ?? []).length, result.targets.length);
  });

  it('leaves no container behind', async () => {
    const left = await dockerApi().listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${result.meta.run}`] } });
    assert.deepEqual(
      left.map((c) => c.Names),
      [],
    );
  });
});
