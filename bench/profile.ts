// Where the shim's CPU goes under kubelet's polling (issue 12): populates the node through one
// shim, then starts a second one on the same state directory under `node --cpu-prof`, runs the
// kubelet-like loop (./kubelet-loop.ts) taking turns with idle slots, measures CPU per call of
// each polled RPC, stops it and summarises the profile by module and function.
//   node dist/bench/profile.js [--pods=50] [--seconds=30] [--warmup-seconds=60] [--calls=100] [--sparse-calls=0] [--only=RPC,...] [--out=DIR] [--floor]
// --semi-space=MiB: run the shim with --max-semi-space-size=MiB (by default it runs with none,
// as main.js runs it: through its #! line, with its malloc settings).
// --sparse-calls=N: also N calls of each RPC one second apart, as kubelet spaces them (./kubelet-loop.ts cpuPerSparseCall).
// --no-profile: without --cpu-prof (the profiler's own cost left out of the figures).
// --floor: the same loop (after the same warm-up) against the kept-answers grpc-js floor (./grpc-floor.ts).
// --only: the CPU-per-call part for these RPCs alone (with --seconds=0, a profile of just them).
// Writes <out>/profile-<date>.txt (the summary and the CPU figures) and the raw .cpuprofile.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { newTestRun, removePaths, removeTestContainers } from '../test/support/cleanup';
import { ensureTestImages } from '../test/support/images';
import { startShim, tempDir, type ShimProcess } from '../test/support/shim';
import { type CpuProfile, renderProfileSummary, summarizeProfile } from './cpu-profile';
import { type KubeletLoopResult, CPU_PER_CALL_RPCS, cpuPerCall, cpuPerSparseCall, measureKubeletLoop, POLLED_RPCS, warmUpLoop } from './kubelet-loop';
import { startKeptFloor } from './grpc-floor';
import { dockerdPid, untilQuiet } from './procfs';
import { populate, type PopulatedPod } from './reads';
import type { BenchRun } from './workload';
import { countOption, runAsProgram } from './entry';

const REPO = path.resolve(__dirname, '../..');

/** The loop against the kept-answers floor (grpc-floor.ts), warmed up as the shim was. */
async function measureFloorLoop(shimAddress: string, pods: readonly PopulatedPod[], warmupSeconds: number, seconds: number): Promise<KubeletLoopResult> {
  const floor = await startKeptFloor(shimAddress);
  try {
    log(`floor: ${warmupSeconds} s of warm-up, then ${seconds} loop slots and ${seconds} idle slots`);
    await warmUpLoop(floor.client, warmupSeconds);
    return await measureKubeletLoop(floor.client, pods, { shim: floor.pid, dockerd: dockerdPid() }, seconds);
  } finally {
    await floor.stop();
  }
}

/** How long to wait for the shim's start-up walks to end before measuring anyway. */
const QUIET_DEADLINE_MS = 120_000;

function log(message: string): void {
  process.stderr.write(`[profile ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

export async function main(argv: readonly string[]): Promise<number> {
  const podCount = countOption(argv, 'pods', 50);
  const seconds = countOption(argv, 'seconds', 30);
  const calls = countOption(argv, 'calls', 100);
  const outDir = path.resolve(argv.find((a) => a.startsWith('--out='))?.slice(6) ?? path.join(REPO, 'bench', 'results', 'profile'));
  const bench: BenchRun = { run: newTestRun(), logRoot: tempDir('profile-logs') };
  const rootDir = tempDir('profile-root');
  const profDir = tempDir('profile-cpu');
  let shim: ShimProcess | undefined;
  try {
    await ensureTestImages();
    shim = await startShim({ args: ['--log-level=info'], rootDir });
    const pods: PopulatedPod[] = [];
    log(`populating ${podCount} pods`);
    await populate(shim.client, bench, pods, podCount * 2, 4);
    await shim.stop();
    shim = undefined;
    const profiled = !argv.includes('--no-profile');
    // Node flags as main.js runs with (none), unless --semi-space=MiB tries a young generation size.
    const semiSpace = countOption(argv, 'semi-space', 0);
    const nodeFlags = [...(semiSpace > 0 ? [`--max-semi-space-size=${semiSpace}`] : []), ...(profiled ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [])];
    // No flags: main.js itself, so its #! line's malloc settings apply as when deployed.
    shim = await startShim({ args: ['--log-level=info'], rootDir, ...(nodeFlags.length > 0 ? { nodeFlags } : {}) });
    const pid = shim.child.pid!;
    // The first calls fill what is filled once (cgroup paths, image lookups).
    for (const rpc of POLLED_RPCS) await cpuPerCall(shim.client, pods, pid, [rpc], 3, 0);
    // A fresh root directory has no saved image-layer figures: the shim walks Docker's image
    // store first (minutes, paced), which is not kubelet's loop; the full bench measures long after.
    const { waitedMs: quietAfterMs } = await untilQuiet(pid, QUIET_DEADLINE_MS);
    log(`the shim was quiet after ${Math.round(quietAfterMs / 1000)} s`);
    // The full bench measures a shim that has served for minutes: its code is compiled and
    // optimised. Under the loop alone V8 still optimises for the first minute (measured at 50
    // pods: 150-190 ms of the shim's CPU per 10 s of loop in its second and third 10 s, 35-50
    // ms after the first minute, with TurboFan compiling a function or more per second meanwhile).
    const warmup = countOption(argv, 'warmup-seconds', 60);
    log(`warm-up: ${warmup} s of the loop, not measured`);
    await warmUpLoop(shim.client, warmup);
    log(`kubelet loop: ${seconds} loop slots and ${seconds} idle slots`);
    const loop = await measureKubeletLoop(shim.client, pods, { shim: pid, dockerd: dockerdPid() }, seconds);
    const floorLoop = argv.includes('--floor') ? await measureFloorLoop(shim.address, pods, warmup, seconds) : undefined;
    log(`CPU per call: ${calls} calls each`);
    const only = argv.find((a) => a.startsWith('--only='))?.slice(7).split(',');
    const rpcs = CPU_PER_CALL_RPCS;
    const perCall = await cpuPerCall(shim.client, pods, pid, only ? rpcs.filter((r) => only.includes(r)) : rpcs, calls, 5);
    const sparseCalls = countOption(argv, 'sparse-calls', 0);
    if (sparseCalls > 0) log(`CPU per call one second apart: ${sparseCalls} calls each`);
    const sparse = sparseCalls > 0 ? await cpuPerSparseCall(shim.client, pods, pid, only ? rpcs.filter((r) => only.includes(r)) : rpcs, sparseCalls) : [];
    await shim.stop();
    shim = undefined;
    const file = fs.readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (profiled && !file) throw new Error(`no .cpuprofile in ${profDir}`);
    const profile = file === undefined ? undefined : (JSON.parse(fs.readFileSync(path.join(profDir, file), 'utf8')) as CpuProfile);
    const text = [
      `shim CPU at ${loop.pods} pods over ${seconds} s: kubelet loop ${loop.shim.loopCpuMs} ms, idle ${loop.shim.idleCpuMs} ms, loop net of idle ${loop.shim.netCpuMs} ms; dockerd net ${loop.dockerd.netCpuMs} ms`,
      ...(floorLoop ? [`floor (a bare grpc-js server, the shim's answers kept) over ${seconds} s: loop ${floorLoop.shim.loopCpuMs} ms, idle ${floorLoop.shim.idleCpuMs} ms, net of idle ${floorLoop.shim.netCpuMs} ms`] : []),
      'CPU per call (ms):',
      ...perCall.map((c) => `  ${c.rpc.padEnd(20)} ${c.cpuMsPerCall}`),
      ...(sparse.length > 0 ? ['CPU per call one second apart (ms):', ...sparse.map((c) => `  ${c.rpc.padEnd(20)} ${c.cpuMsPerCall}`)] : []),
      '',
      ...(profile ? ['profile of the whole run of the profiled shim (start-up, loop, idle, per-call calls):', renderProfileSummary(summarizeProfile(profile, 25))] : []),
    ].join('\n');
    fs.mkdirSync(outDir, { recursive: true });
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    fs.writeFileSync(path.join(outDir, `profile-${stamp}.txt`), `${text}\n`);
    if (file !== undefined) fs.copyFileSync(path.join(profDir, file), path.join(outDir, `profile-${stamp}.cpuprofile`));
    process.stdout.write(`${text}\n`);
    return 0;
  } finally {
    await shim?.stop();
    await removeTestContainers({ run: bench.run });
    removePaths(bench.logRoot, rootDir, profDir);
  }
}

runAsProgram(module, 'profile', main);
