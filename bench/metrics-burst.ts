// Issue 44 point 4: what a burst of ListPodSandboxMetrics costs the shim at a node's size. Populates
// pods (a pause and one sleeping container each) through one shim, then for each built shim given
// (--main, repeatable: a "before" build and an "after" one, measured on the same node in turn, each
// started afresh on the same state directory): warm-up calls, the shim left to go quiet, its peak
// (VmHWM) reset; `calls` calls back to back (shim CPU per call, wall p50), then `rounds` rounds of
// `parallel` calls at once; then its RSS right after, its peak, and its RSS each second for
// `recover-seconds`. Removes everything it made.
//   node scripts/project-node.mjs dist/bench/metrics-burst.js [--containers=200] [--calls=20]
//     [--parallel=10] [--rounds=2] [--recover-seconds=60] [--main=PATH ...] [--cpu-prof=DIR]
// --cpu-prof: each shim runs under `node --cpu-prof` (with main.js's malloc settings), and its
// profile is summarised after its figures (which then include the profiler's own cost).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { newTestRun } from '../test/support/cleanup';
import { ensureTestImages } from '../test/support/images';
import { criClient } from '../test/support/client';
import { MAIN_JS, startShim, tempDir, type ShimProcess } from '../test/support/shim';
import { type CpuProfile, renderProfileSummary, summarizeProfile } from './cpu-profile';
import { countOption, runAsProgram } from './entry';
import { memAvailableBytes, memoryBytes, preciseCpuMs, resetPeakMemory, taskHeadroom, untilQuiet } from './procfs';
import { populate, type PopulatedPod } from './reads';
import { SHIM_LOG_LEVEL } from './run';
import { summarize } from './stats';
import { type BenchRun, withCleanUp } from './workload';

const MiB = 2 ** 20;
/**
 * Issue 44's targets: peak, the RSS a while after (back within a tenth of the RSS before the
 * burst, restated as the idle part's: 80 MiB is under a quiet shim's own at these sizes), and
 * CPU per call.
 */
const TARGETS = { peakMiB: 200, recoveredOverBefore: 0.1, cpuMsPerCall: 100 };
const WARMUP_CALLS = 3;
const QUIET_DEADLINE_MS = 120_000;
/** Pods added between two looks at the machine (it is shared): none more once MemAvailable or the threads left run low. */
const CHUNK_PODS = 50;
const RESERVE_BYTES = 3 * 2 ** 30;
const RESERVE_TASKS_SHARE = 0.2;
/** What main.js's #! line sets, kept when the shim is started through node to profile it. */
const MALLOC_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_TRIM_THRESHOLD_: '131072' };

function log(message: string): void {
  process.stderr.write(`[metrics-burst ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

const mib = (bytes: number): number => Math.round((bytes / MiB) * 10) / 10;

interface BurstFigures {
  main: string;
  containers: number;
  rssBeforeMiB: number;
  cpuMsPerCall: number;
  wallMsP50: number;
  parallelCpuMsPerCall: number;
  rssAfterMiB: number;
  peakMiB: number;
  /** Seconds after the burst until the RSS was back within TARGETS.recoveredOverBefore of the RSS before; null: not within the window. */
  underTargetAfterS: number | null;
  rssRecoveredMiB: number;
}

async function measure(shim: ShimProcess, mainJs: string, containers: number, opts: { calls: number; parallel: number; rounds: number; recoverSeconds: number }): Promise<BurstFigures> {
  const pid = shim.child.pid!;
  // kubelet's message limit (16 MiB), not grpc-js's default 4 MiB: the answer at 1,000 containers is about that size.
  const client = criClient(shim.address, { 'grpc.max_receive_message_length': 16 * MiB });
  try {
    return await measureWith(pid, () => client.runtime.ListPodSandboxMetrics({}), mainJs, containers, opts);
  } finally {
    client.close();
  }
}

async function measureWith(pid: number, call: () => Promise<unknown>, mainJs: string, containers: number, opts: { calls: number; parallel: number; rounds: number; recoverSeconds: number }): Promise<BurstFigures> {
  for (let i = 0; i < WARMUP_CALLS; i++) await call();
  const { waitedMs } = await untilQuiet(pid, QUIET_DEADLINE_MS);
  log(`quiet after ${Math.round(waitedMs / 1000)} s; RSS ${mib(memoryBytes(pid))} MiB`);
  // Wait for the heap trim's look after the warm-up to have passed, so the figures start from a settled shim.
  await new Promise((r) => setTimeout(r, 6000));
  const rssBefore = memoryBytes(pid);
  resetPeakMemory(pid);
  const walls: number[] = [];
  const cpu0 = preciseCpuMs(pid);
  for (let i = 0; i < opts.calls; i++) {
    const t0 = performance.now();
    await call();
    walls.push(performance.now() - t0);
  }
  const cpu1 = preciseCpuMs(pid);
  for (let r = 0; r < opts.rounds; r++) await Promise.all(Array.from({ length: opts.parallel }, call));
  const cpu2 = preciseCpuMs(pid);
  const rssAfter = memoryBytes(pid);
  let underTargetAfterS: number | null = null;
  for (let s = 1; s <= opts.recoverSeconds; s++) {
    await new Promise((r) => setTimeout(r, 1000));
    if (underTargetAfterS === null && memoryBytes(pid) <= rssBefore * (1 + TARGETS.recoveredOverBefore)) underTargetAfterS = s;
  }
  const peak = memoryBytes(pid, 'VmHWM');
  return {
    main: mainJs,
    containers,
    rssBeforeMiB: mib(rssBefore),
    cpuMsPerCall: Math.round(((cpu1 - cpu0) / opts.calls) * 10) / 10,
    wallMsP50: Math.round(summarize(walls).p50 * 10) / 10,
    parallelCpuMsPerCall: Math.round(((cpu2 - cpu1) / Math.max(1, opts.rounds * opts.parallel)) * 10) / 10,
    rssAfterMiB: mib(rssAfter),
    peakMiB: mib(peak),
    underTargetAfterS,
    rssRecoveredMiB: mib(memoryBytes(pid)),
  };
}

function render(f: BurstFigures): string {
  const pass = (ok: boolean): string => (ok ? 'PASS' : 'MISS');
  return [
    `${f.main} at ${f.containers} containers:`,
    `  shim CPU per call, back to back: ${f.cpuMsPerCall} ms (<= ${TARGETS.cpuMsPerCall} ${pass(f.cpuMsPerCall <= TARGETS.cpuMsPerCall)}); wall p50 ${f.wallMsP50} ms; in parallel rounds ${f.parallelCpuMsPerCall} ms per call`,
    `  RSS before ${f.rssBeforeMiB} MiB, right after ${f.rssAfterMiB}, peak ${f.peakMiB} (<= ${TARGETS.peakMiB} ${pass(f.peakMiB <= TARGETS.peakMiB)})`,
    `  RSS ${f.rssRecoveredMiB} MiB at the end of the window; within ${TARGETS.recoveredOverBefore * 100}% of the RSS before after ${f.underTargetAfterS ?? 'never'} s (${pass(f.underTargetAfterS !== null)})`,
  ].join('\n');
}

export async function main(argv: readonly string[]): Promise<number> {
  const containers = countOption(argv, 'containers', 200);
  const opts = {
    calls: Math.max(1, countOption(argv, 'calls', 20)),
    parallel: countOption(argv, 'parallel', 10),
    rounds: countOption(argv, 'rounds', 2),
    recoverSeconds: countOption(argv, 'recover-seconds', 60),
  };
  const profDir = argv.find((a) => a.startsWith('--cpu-prof='))?.slice('--cpu-prof='.length);
  const mains = argv.filter((a) => a.startsWith('--main=')).map((a) => a.slice('--main='.length));
  if (mains.length === 0) mains.push(MAIN_JS);
  const bench: BenchRun = { run: newTestRun(), logRoot: tempDir('metrics-burst-logs') };
  const rootDir = tempDir('metrics-burst-root');
  let shim: ShimProcess | undefined;
  return withCleanUp(bench, [rootDir], () => shim, log, async () => {
    await ensureTestImages();
    shim = await startShim({ args: [`--log-level=${SHIM_LOG_LEVEL}`], rootDir, mainJs: mains[0]! });
    const pods: PopulatedPod[] = [];
    log(`populating ${containers} containers`);
    while (pods.length * 2 < containers) {
      const { tasks, max } = taskHeadroom();
      if (memAvailableBytes() < RESERVE_BYTES || tasks > max * (1 - RESERVE_TASKS_SHARE)) {
        log(`stopped populating at ${pods.length * 2} containers: the machine's memory or threads run low`);
        break;
      }
      await populate(shim.client, bench, pods, Math.min(containers, (pods.length + CHUNK_PODS) * 2), 4);
      log(`${pods.length * 2} containers; MemAvailable ${(memAvailableBytes() / 2 ** 30).toFixed(1)} GiB, threads ${taskHeadroom().tasks}`);
    }
    await shim.stop();
    shim = undefined;
    const results: BurstFigures[] = [];
    for (const [i, mainJs] of mains.entries()) {
      log(`${mainJs}: starting`);
      const dir = profDir && path.resolve(profDir, String(i));
      if (dir) fs.mkdirSync(dir, { recursive: true });
      const profiled = dir ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${dir}`], env: { ...process.env, ...MALLOC_ENV } } : {};
      shim = await startShim({ args: [`--log-level=${SHIM_LOG_LEVEL}`], rootDir, mainJs, ...profiled });
      const figures = await measure(shim, mainJs, pods.length * 2, opts);
      await shim.stop();
      shim = undefined;
      process.stdout.write(`${render(figures)}\n`);
      const file = dir && fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
      if (dir && file) process.stdout.write(`${renderProfileSummary(summarizeProfile(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as CpuProfile, 25))}\n`);
      results.push(figures);
    }
    process.stdout.write(`${JSON.stringify({ date: new Date().toISOString(), loadavg: fs.readFileSync('/proc/loadavg', 'utf8').trim(), opts, results })}\n`);
    return 0;
  });
}

runAsProgram(module, 'metrics burst', main);
