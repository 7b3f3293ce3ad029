// The scale mode (issue 18, point 4): one node with up to 1,000 containers (500 pods of a pause
// and one sleeping container), populated through the shim in steps, and at each step what a
// node that size asks of the shim: the reads' p50, the stats calls, the shim's RSS, open files
// and Docker connections, kubelet's polling loop, what the shim's log streams cost an idle
// dockerd, and a restarted shim's time to its first answers. A step is only populated while the
// machine has room (MemAvailable and threads, each container being a containerd-shim process).
// Prints one table with the targets and writes JSON; removes everything it made. Not run by CI.
//   node dist/bench/scale.js [--containers=1000] [--steps=200,500,1000] [--reserve-gib=2]
//     [--iterations=20] [--loop-seconds=30] [--idle-seconds=20] [--startup-runs=5] [--out=DIR]
import * as fs from 'node:fs';
import * as path from 'node:path';
import { newTestRun } from '../test/support/cleanup';
import { dockerApi, ensureTestImages } from '../test/support/images';
import { MAIN_JS, startShim, tempDir, type ShimProcess } from '../test/support/shim';
import type { CriClient } from '../test/support/client';
import { CPU_PER_CALL_RPCS, cpuPerCall, measureKubeletLoop } from './kubelet-loop';
import { medianNetOfIdle, pollInTurns } from './polling';
import { dockerdPid, memAvailableBytes, memoryBytes, openFiles, taskHeadroom, threadCount } from './procfs';
import { dockerCounts, measureReads, populate, type PopulatedPod } from './reads';
import { renderTargets } from './report';
import { environmentMeta, SHIM_LOG_LEVEL } from './run';
import { checkScaleTargets, type DockerdIdle, type Headroom, podsThatFit, renderScaleHeader, renderScaleTable, type ScaleResult, type ScaleStep, scaleSteps } from './scale-report';
import { measureStartup, startupBuilds } from './startup';
import { summarize } from './stats';
import { type BenchRun, withCleanUp } from './workload';
import { runAsProgram } from './entry';

interface ScalePlan {
  containers: number;
  steps: number[];
  /** Memory that must stay available (MemAvailable) after the next pods. */
  reserveBytes: number;
  iterations: number;
  loopSeconds: number;
  idleSeconds: number;
  startupRuns: number;
  outDir: string;
}

const REPO = path.resolve(__dirname, '../..');
/** Pods added between two looks at the machine's headroom. */
const CHUNK_PODS = 25;
/** Pods created through the shim at once, as the bench populates. */
const CONCURRENCY = 4;
/** A pod's share before any is measured: two containerd-shims (~13 MiB each) and their processes, with room. */
const FIRST_GUESS = { memoryBytes: 40 * 1024 * 1024, tasks: 30 };
/** Per-call CPU reads: calls per RPC, after warm-up ones. */
const CPU_CALLS = 20;
const WARMUP = 3;
/** Seconds for dockerd to let go of closed streams before it is measured without the shim. */
const STREAMS_SETTLE_MS = 5000;

function log(message: string): void {
  process.stderr.write(`[scale ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function option(argv: readonly string[], name: string): string | undefined {
  return argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

function count(argv: readonly string[], name: string, fallback: number): number {
  const text = option(argv, name);
  const n = text === undefined ? fallback : Number(text);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name}: a number >= 0, not ${text}`);
  return n;
}

export function scalePlanFrom(argv: readonly string[]): ScalePlan {
  const known = ['containers', 'steps', 'reserve-gib', 'iterations', 'loop-seconds', 'idle-seconds', 'startup-runs', 'out'];
  const unknown = argv.filter((a) => !known.some((k) => a.startsWith(`--${k}=`)));
  if (unknown.length > 0) throw new Error(`unknown argument(s): ${unknown.join(' ')}; usage: scale.js [--containers=1000] [--steps=200,500,1000] [--reserve-gib=2] [--iterations=20] [--loop-seconds=30] [--idle-seconds=20] [--startup-runs=5] [--out=DIR]`);
  const containers = count(argv, 'containers', 1000);
  const stepsText = option(argv, 'steps');
  const steps = stepsText === undefined ? scaleSteps(containers) : scaleSteps(containers, stepsText.split(',').map(Number));
  return {
    containers,
    steps,
    reserveBytes: count(argv, 'reserve-gib', 2) * 2 ** 30,
    iterations: Math.max(1, count(argv, 'iterations', 20)),
    loopSeconds: count(argv, 'loop-seconds', 30),
    idleSeconds: Math.max(1, count(argv, 'idle-seconds', 20)),
    startupRuns: Math.max(1, count(argv, 'startup-runs', 5)),
    outDir: path.resolve(option(argv, 'out') ?? path.join(REPO, 'bench', 'results')),
  };
}

/** What a pod has cost the machine so far (from the start of the run), or the first guess. */
class PodCost {
  private readonly memory0 = memAvailableBytes();
  private readonly tasks0 = taskHeadroom().tasks;

  headrooms(plan: ScalePlan, pods: number): Headroom[] {
    const memory = memAvailableBytes();
    const { tasks, max } = taskHeadroom();
    // Too few pods say little about a pod's share; others' work on the machine moves both figures.
    const measured = pods >= CHUNK_PODS;
    return [
      { name: 'MemAvailable', available: memory, reserve: plan.reserveBytes, perPod: measured ? Math.max(1, (this.memory0 - memory) / pods) : FIRST_GUESS.memoryBytes },
      { name: 'threads (kernel.pid_max)', available: max - tasks, reserve: Math.ceil(max / 10), perPod: measured ? Math.max(1, (tasks - this.tasks0) / pods) : FIRST_GUESS.tasks },
    ];
  }
}

/** Adds pods in chunks up to `containers`; gives why it stopped short, or null. */
async function populateWithin(client: CriClient, bench: BenchRun, pods: PopulatedPod[], containers: number, plan: ScalePlan, cost: PodCost): Promise<string | null> {
  while (pods.length * 2 < containers) {
    const fit = podsThatFit(cost.headrooms(plan, pods.length));
    const take = Math.min(CHUNK_PODS, containers / 2 - pods.length, fit.pods);
    if (take <= 0) return `${fit.limitedBy} would fall below its reserve with another pod, at ${pods.length * 2} containers`;
    try {
      await populate(client, bench, pods, (pods.length + take) * 2, CONCURRENCY);
    } catch (err) {
      return `populating failed at ${pods.length * 2} containers: ${(err as Error).message}`;
    }
    log(`${pods.length * 2} containers; MemAvailable ${(memAvailableBytes() / 2 ** 30).toFixed(1)} GiB, threads ${taskHeadroom().tasks}`);
  }
  return null;
}

/** dockerd over `seconds` idle one-second slots, and what it holds at their end. */
async function dockerdIdle(dockerd: number, seconds: number): Promise<DockerdIdle> {
  const [idle] = await pollInTurns(seconds, [{ name: 'idle', tick: async () => undefined }], [dockerd]);
  return {
    seconds,
    cpuMsPer30s: medianNetOfIdle(idle!.slotCpuMs[0]!, [], 30),
    cpuMs: idle!.cpuMs[0]!,
    rssBytes: memoryBytes(dockerd),
    threads: threadCount(dockerd),
    files: openFiles(dockerd),
  };
}

/**
 * Everything measured at one step. Stops `shim` on the way (dockerd without the log streams,
 * then the start-up execs on its state directory); the caller starts the next one.
 */
async function measureStep(plan: ScalePlan, bench: BenchRun, shim: ShimProcess, pods: readonly PopulatedPod[]): Promise<ScaleStep> {
  const docker = dockerApi();
  const dockerd = dockerdPid();
  const client = shim.client;
  const shimPid = shim.child.pid!;
  const containers = pods.length * 2;
  const counts = await dockerCounts(docker);
  const memAvailable = memAvailableBytes();
  log(`step ${containers}: reads, ${plan.iterations} per call (Docker holds ${counts.all}, ${counts.running} running)`);
  // The raw stats rows would be a Docker stats read per container per call, minutes at this size.
  const samples = await measureReads({ client, docker, bench, pods }, plan.iterations, WARMUP, (call) => !/Stats|Metrics/.test(call.name));
  const reads = samples.map((s) => ({ call: s.call.name, rawCall: s.call.rawCall, shim: summarize(s.shim), raw: s.raw.length > 0 ? summarize(s.raw) : null }));
  log(`step ${containers}: shim CPU per call, ${CPU_CALLS} calls per RPC`);
  const perCall = await cpuPerCall(client, pods, shimPid, CPU_PER_CALL_RPCS, CPU_CALLS, WARMUP);
  // Right after 20 of each call back to back (ListPodSandboxMetrics at this size makes tens of
  // MiB of garbage per call); the target is read below, under kubelet's own polling.
  const afterCallsBytes = memoryBytes(shimPid);
  const files = openFiles(shimPid);
  log(`step ${containers}: shim RSS ${(afterCallsBytes / 2 ** 20).toFixed(1)} MiB after the calls, ${files.fds} fds, ${files.unixUnbound} unbound unix sockets`);
  log(`step ${containers}: kubelet loop, ${plan.loopSeconds} loop slots and as many idle`);
  const kubeletLoop = await measureKubeletLoop(client, pods, { shim: shimPid, dockerd }, plan.loopSeconds);
  const shimFigures = { rssBytes: memoryBytes(shimPid), afterCallsBytes, peakBytes: memoryBytes(shimPid, 'VmHWM'), files };
  log(`step ${containers}: shim RSS ${(shimFigures.rssBytes / 2 ** 20).toFixed(1)} MiB at the end of kubelet's loop`);
  log(`step ${containers}: dockerd idle ${plan.idleSeconds} s with the shim's log streams open`);
  const withShim = await dockerdIdle(dockerd, plan.idleSeconds);
  await shim.stop();
  await new Promise((r) => setTimeout(r, STREAMS_SETTLE_MS));
  log(`step ${containers}: dockerd idle ${plan.idleSeconds} s with the shim stopped`);
  const withoutShim = await dockerdIdle(dockerd, plan.idleSeconds);
  const { self } = startupBuilds(MAIN_JS, undefined);
  log(`step ${containers}: start-up, ${plan.startupRuns} execs (+1 warm-up)`);
  const startupSamples = (await measureStartup([self], shim.rootDir, { runs: plan.startupRuns, warmup: 1, logLevel: SHIM_LOG_LEVEL, progress: log })).get(self.label)!;
  return {
    containers,
    pods: pods.length,
    docker: counts,
    memAvailableBytes: memAvailable,
    reads,
    cpuPerCall: perCall,
    shim: shimFigures,
    kubeletLoop,
    logStreams: { withShim, withoutShim },
    startup: { runs: plan.startupRuns, version: summarize(startupSamples.map((s) => s.versionMs)), listContainers: summarize(startupSamples.map((s) => s.listMs)) },
  };
}

export async function main(argv: readonly string[]): Promise<number> {
  const plan = scalePlanFrom(argv);
  const started = Date.now();
  const bench: BenchRun = { run: newTestRun(), logRoot: tempDir('scale-logs') };
  // Outlives each shim: the next step's shim and the start-up execs resume from it.
  const rootDir = tempDir('scale-root');
  let shim: ShimProcess | undefined;
  return withCleanUp(bench, [rootDir], () => shim, log, async () => {
    await ensureTestImages();
    const cost = new PodCost();
    const pods: PopulatedPod[] = [];
    const steps: ScaleStep[] = [];
    let stoppedBecause: string | null = null;
    log(`run ${bench.run}: steps ${plan.steps.join(', ')} containers`);
    for (const target of plan.steps) {
      shim ??= await startShim({ args: [`--log-level=${SHIM_LOG_LEVEL}`], rootDir });
      log(`populating to ${target} containers`);
      stoppedBecause = await populateWithin(shim.client, bench, pods, target, plan, cost);
      if (stoppedBecause) log(`stopped short: ${stoppedBecause}`);
      // A step cut short is measured when it got past the last one.
      if (pods.length * 2 > (steps.at(-1)?.containers ?? 0)) {
        steps.push(await measureStep(plan, bench, shim, pods));
        shim = undefined;
      }
      if (stoppedBecause) break;
    }
    const env = await environmentMeta();
    const result: ScaleResult = {
      meta: { date: new Date().toISOString(), run: bench.run, ...env, shimLogLevel: SHIM_LOG_LEVEL, readIterations: plan.iterations, durationSeconds: Math.round((Date.now() - started) / 1000) },
      requested: plan.containers,
      stoppedBecause,
      steps,
      targets: checkScaleTargets(steps),
    };
    fs.mkdirSync(plan.outDir, { recursive: true });
    const file = path.join(plan.outDir, `scale-${result.meta.date.replace(/[:.]/g, '-')}.json`);
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`${renderScaleHeader(result)}\n\n${renderScaleTable(result)}\n\n${renderTargets(result.targets)}\n\nJSON: ${file}\n`);
    return 0;
  });
}

runAsProgram(module, 'scale bench', main);
