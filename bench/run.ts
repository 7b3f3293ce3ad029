// `npm run bench`: issue 6's benchmark. Starts a fresh shim, measures the lifecycle calls, the
// read calls at growing numbers of containers and a kubelet-like polling loop, each next to
// the raw Docker calls doing the same work on the same engine, then the time from exec to the
// first answers of a restarted shim on the populated node; prints one Markdown table with the
// targets and writes the same as JSON. Everything it makes is removed at the end.
//   node dist/bench/run.js [--quick] [--out=DIR] [--baseline=PATH/dist/src/main.js]
// --baseline: another build's main.js, exec'd taking turns with this one in the start-up part
// (a before/after; see bench/README.md for how to build one from an older commit).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { newTestRun, removeTestContainers } from '../test/support/cleanup';
import { dockerApi, ensureTestImages, testDockerSocket } from '../test/support/images';
import { MAIN_JS, startShim, tempDir, type ShimProcess } from '../test/support/shim';
import { startGrpcFloor, startKeptFloor } from './grpc-floor';
import { FLOOR_CALLS, LIFECYCLE_CALLS, RAW_LIFECYCLE_CALLS, runLifecycle, START_UP_WALK_DEADLINE_MS, waitForStartUpWalk } from './lifecycle';
import { measurePodNetwork } from './network';
import { countRequests, medianNetOfIdle, netOfIdle, pollInTurns, rawTick, shimTick, type SideTotals, STATUS_PODS_PER_TICK } from './polling';
import { dockerdPid, memoryBytes } from './procfs';
import { countBothSides } from './request-counter';
import { dockerCounts, measureReads, populate, type PopulatedPod } from './reads';
import { CPU_PER_CALL_RPCS, cpuPerCall, measureKubeletLoop, warmUpLoop } from './kubelet-loop';
import {
  type BenchResult,
  checkTargets,
  type KubeletLoopFloorRow,
  type KubeletLoopRow,
  type LatencyRow,
  type PollingResult,
  type ReadLevel,
  renderHeader,
  renderTable,
  renderTargets,
  type StartupResult,
  type StartupTimes,
} from './report';
import { BURSTS, dockerStoreFiles, type IdleOptions, measureIdle, withFilledStore } from './idle';
import { IDLE_TARGETS } from './idle-report';
import { measureStartup, startupBuilds, type StartupSample } from './startup';
import { ratio, summarize } from './stats';
import { measureStreams, streamsPlan, type StreamsPlan } from './streams';
import { type BenchRun, withCleanUp } from './workload';
import { runAsProgram } from './entry';

interface BenchPlan {
  mode: 'full' | 'quick';
  lifecycleRounds: number;
  lifecycleWarmup: number;
  /** How long the lifecycle part waits at most for the fresh shim to be quiet (0: it does not wait). */
  quietDeadlineMs: number;
  levels: number[];
  readIterations: number;
  readWarmup: number;
  pollSeconds: number;
  /** Ticks per side whose Docker requests are counted. */
  countTicks: number;
  /** Pods created through the shim at once while populating. */
  concurrency: number;
  /** How long the fresh shim sits without calls before its idle RSS is read. */
  idleSettleMs: number;
  /** Counted execs per build in the start-up part, and uncounted ones before them. */
  startupRuns: number;
  startupWarmup: number;
  /** Calls per RPC when the shim's CPU per call is read (at each read level). */
  cpuCalls: number;
  /** The read level (containers) at which kubelet's polling loop runs against the shim. */
  kubeletLoopLevel: number;
  /** Seconds of kubelet's pollers (and as many idle): 60 holds one round of every poller but the image GC's. */
  kubeletLoopSeconds: number;
  /** Exec and port-forward transfers (bench/streams.ts). */
  streams: StreamsPlan;
  /** Another build's main.js to time in the start-up part too. */
  baseline: string | undefined;
  /** The idle part (./idle.ts), on a shim and pods of its own. */
  idle: Pick<IdleOptions, 'pods' | 'seconds' | 'settleSeconds' | 'quietDeadlineMs' | 'bursts' | 'minStoreFiles'>;
  outDir: string;
}

const REPO = path.resolve(__dirname, '../..');
/** kubelet's usual setting; the tests' debug logging would be a cost no node pays. */
export const SHIM_LOG_LEVEL = 'info';

const FULL_IDLE: BenchPlan['idle'] = { pods: 50, seconds: 60, settleSeconds: 60, quietDeadlineMs: START_UP_WALK_DEADLINE_MS, bursts: new Set(BURSTS), minStoreFiles: IDLE_TARGETS.storeFiles };
const QUICK_IDLE: BenchPlan['idle'] = { pods: 10, seconds: 5, settleSeconds: 5, quietDeadlineMs: 0, bursts: new Set(), minStoreFiles: 0 };

export function planFrom(argv: readonly string[]): BenchPlan {
  const quick = argv.includes('--quick');
  const out = argv.find((a) => a.startsWith('--out='))?.slice('--out='.length);
  const baselineArg = argv.find((a) => a.startsWith('--baseline='))?.slice('--baseline='.length);
  const unknown = argv.filter((a) => a !== '--quick' && !a.startsWith('--out=') && !a.startsWith('--baseline='));
  if (unknown.length > 0) throw new Error(`unknown argument(s): ${unknown.join(' ')}; usage: run.js [--quick] [--out=DIR] [--baseline=MAIN_JS]`);
  const outDir = path.resolve(out ?? path.join(REPO, 'bench', 'results', quick ? 'quick' : ''));
  const baseline = baselineArg === undefined ? undefined : path.resolve(baselineArg);
  if (baseline !== undefined && !fs.existsSync(baseline)) throw new Error(`--baseline: ${baseline} does not exist`);
  return quick
    ? { mode: 'quick', lifecycleRounds: 3, lifecycleWarmup: 1, quietDeadlineMs: 0, levels: [0, 10], readIterations: 5, readWarmup: 1, pollSeconds: 3, countTicks: 2, concurrency: 4, idleSettleMs: 1000, startupRuns: 3, startupWarmup: 1, cpuCalls: 5, kubeletLoopLevel: 10, kubeletLoopSeconds: 3, streams: streamsPlan(true), baseline, outDir, idle: QUICK_IDLE }
    : { mode: 'full', lifecycleRounds: 20, lifecycleWarmup: 2, quietDeadlineMs: START_UP_WALK_DEADLINE_MS, levels: [0, 50, 100, 200], readIterations: 40, readWarmup: 3, pollSeconds: 30, countTicks: 5, concurrency: 4, idleSettleMs: 5000, startupRuns: 10, startupWarmup: 1, cpuCalls: 50, kubeletLoopLevel: 100, kubeletLoopSeconds: 60, streams: streamsPlan(false), baseline, outDir, idle: FULL_IDLE };
}

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function latencyRow(call: string, rawCall: string, shim: number[], raw: number[]): LatencyRow {
  const s = summarize(shim);
  const r = summarize(raw);
  return { call, rawCall, shim: s, raw: r, ratioP50: ratio(s.p50, r.p50) };
}

async function measure(plan: BenchPlan, bench: BenchRun, rootDir: string, shim: ShimProcess, shimPid: number, idleRss: number): Promise<Omit<BenchResult, 'targets' | 'meta'>> {
  const docker = dockerApi();
  const dockerd = dockerdPid();
  const client = shim.client;
  const imageStore = await dockerStoreFiles();
  log(`Docker's storage ${imageStore.dir} holds ${imageStore.files} files`);

  await waitForStartUpWalk(shimPid, plan.quietDeadlineMs, log);
  log(`lifecycle: ${plan.lifecycleRounds} rounds per side (+${plan.lifecycleWarmup} warm-up): shim, raw and the grpc-js floor`);
  const floor = await startGrpcFloor(testDockerSocket());
  const life = await runLifecycle(client, docker, bench, plan.lifecycleRounds, plan.lifecycleWarmup, floor).finally(() => floor.stop());
  const lifecycle = LIFECYCLE_CALLS.map((call) => latencyRow(call, RAW_LIFECYCLE_CALLS[call], life[call].shim, life[call].raw));
  const lifecycleFloor = FLOOR_CALLS.map((call) => latencyRow(call, RAW_LIFECYCLE_CALLS[call], life[call].floor, life[call].raw));

  log(`pod network: ${plan.lifecycleRounds} rounds per plugin (+${plan.lifecycleWarmup} warm-up), cni next to Docker's bridge`);
  const network = await measurePodNetwork(bench, [`--log-level=${SHIM_LOG_LEVEL}`], plan.lifecycleRounds, plan.lifecycleWarmup);

  // On a shim with no other pods yet: the transfers are all it does.
  log(`streams: exec stdout, stdin and a port forward over SPDY and WebSocket, ${plan.streams.rounds} round(s) per side, next to the docker CLI`);
  const streams = await measureStreams(client, bench, shimPid, plan.streams, log);

  const pods: PopulatedPod[] = [];
  const reads: ReadLevel[] = [];
  let kubeletLoop: KubeletLoopRow | undefined;
  let kubeletLoopFloor: KubeletLoopFloorRow | undefined;
  for (const level of plan.levels) {
    log(`reads: populating to ${level} containers`);
    await populate(client, bench, pods, level, plan.concurrency);
    const counts = await dockerCounts(docker);
    log(`reads at ${level} (Docker holds ${counts.all} containers, ${counts.running} running)`);
    const samples = await measureReads({ client, docker, bench, pods }, plan.readIterations, plan.readWarmup);
    log(`shim CPU per call at ${level}: ${plan.cpuCalls} calls per RPC`);
    const perCall = await cpuPerCall(client, pods, shimPid, CPU_PER_CALL_RPCS, plan.cpuCalls, 3);
    reads.push({ containers: pods.length * 2, docker: counts, rows: samples.map((s) => latencyRow(s.call.name, s.call.rawCall, s.shim, s.raw)), cpuPerCall: perCall });
    if (level === plan.kubeletLoopLevel) {
      // Steady state, as the floor's below: the reads and CPU-per-call calls just made are a
      // burst, whose garbage the heap trim collects once the calls thin out (a full collection
      // of ~35 ms, then functions compiled again): measured at once, the loop's first seconds
      // held that (two runs at 50 pods: 163 and 150 ms per 30 s, 124 and 143 after the warm-up).
      log(`kubelet loop at ${pods.length} pods: ${plan.kubeletLoopSeconds} s of warm-up, then ${plan.kubeletLoopSeconds} loop slots and as many idle slots`);
      await warmUpLoop(client, plan.kubeletLoopSeconds);
      kubeletLoop = await measureKubeletLoop(client, pods, { shim: shimPid, dockerd }, plan.kubeletLoopSeconds);
      // The floor is warmed up the same, as long as it is measured.
      log(`kubelet loop's floor: a bare grpc-js server with the shim's answers kept, ${plan.kubeletLoopSeconds} s of warm-up, then ${plan.kubeletLoopSeconds} loop slots and as many idle slots`);
      const floor = await startKeptFloor(shim.address);
      kubeletLoopFloor = await warmUpLoop(floor.client, plan.kubeletLoopSeconds)
        .then(() => measureKubeletLoop(floor.client, pods, { shim: floor.pid, dockerd }, plan.kubeletLoopSeconds))
        .then(async (loop) => ({ ...loop, rssBytes: memoryBytes(floor.pid), collectedRssBytes: await floor.collectedRssBytes() }))
        .finally(() => floor.stop());
    }
  }
  if (!kubeletLoop) throw new Error(`the plan's kubelet loop level ${plan.kubeletLoopLevel} is not one of its levels`);

  log(`polling: ${plan.pollSeconds} one-second slots each for raw, idle and shim, taking turns`);
  const [raw, idle, viaShim] = (await pollInTurns(
    plan.pollSeconds,
    [
      { name: 'raw', tick: () => rawTick(docker, pods) },
      { name: 'idle', tick: async () => undefined },
      { name: 'shim', tick: () => shimTick(client, pods) },
    ],
    [dockerd, shimPid],
  )) as [SideTotals, SideTotals, SideTotals];
  const net = {
    shim: netOfIdle(viaShim.cpuMs[0]!, viaShim.wallMs, idle.cpuMs[0]!, idle.wallMs),
    raw: netOfIdle(raw.cpuMs[0]!, raw.wallMs, idle.cpuMs[0]!, idle.wallMs),
  };
  const medianNet = {
    shim: medianNetOfIdle(viaShim.slotCpuMs[0]!, idle.slotCpuMs[0]!, plan.pollSeconds),
    raw: medianNetOfIdle(raw.slotCpuMs[0]!, idle.slotCpuMs[0]!, plan.pollSeconds),
  };
  const pollingCpu: Omit<PollingResult, 'dockerRequests'> = {
    seconds: plan.pollSeconds,
    containers: pods.length * 2,
    tick: `List sandboxes, containers, images; status of ${STATUS_PODS_PER_TICK} sandboxes + ${STATUS_PODS_PER_TICK} containers`,
    dockerdCpuMs: { shim: viaShim.cpuMs[0]!, raw: raw.cpuMs[0]!, idle: idle.cpuMs[0]! },
    wallMs: { shim: viaShim.wallMs, raw: raw.wallMs, idle: idle.wallMs },
    dockerdCpuNetMs: net,
    dockerdCpuMedianNetMs: medianNet,
    ratio: ratio(medianNet.shim, medianNet.raw),
    shimCpuMs: viaShim.cpuMs[1]!,
    shimIdleCpuMs: idle.cpuMs[1]!,
    tickMs: { shim: summarize(viaShim.tickMs), raw: summarize(raw.tickMs) },
  };

  const rss = { idleBytes: idleRss, afterBytes: memoryBytes(shimPid), peakBytes: memoryBytes(shimPid, 'VmHWM') };

  // The timed shim is done; a second one, behind the request counter, answers the same ticks.
  await shim.stop();
  log(`counting Docker requests over ${plan.countTicks} ticks per side`);
  const dockerRequests = await countDockerRequests(plan, pods);
  const startup = await measureStartupPart(plan, rootDir, pods.length * 2);
  return { lifecycle, lifecycleFloor, network, reads, polling: { ...pollingCpu, dockerRequests }, kubeletLoop, kubeletLoopFloor, rss, imageStore, startup, streams };
}

/** Part 5, once the timed shim has stopped: its state directory is what a restarted shim finds. */
async function measureStartupPart(plan: BenchPlan, rootDir: string, containers: number): Promise<StartupResult> {
  const docker = await dockerCounts(dockerApi());
  const { self, inShell, before, all: builds } = startupBuilds(MAIN_JS, plan.baseline);
  log(`startup: ${plan.startupRuns} execs per build (+${plan.startupWarmup} warm-up) with ${containers} containers (Docker holds ${docker.all})`);
  const samples = await measureStartup(builds, rootDir, { runs: plan.startupRuns, warmup: plan.startupWarmup, logLevel: SHIM_LOG_LEVEL, progress: log });
  const times = (s: readonly StartupSample[]): StartupTimes => ({ version: summarize(s.map((x) => x.versionMs)), listContainers: summarize(s.map((x) => x.listMs)) });
  const result: StartupResult = { containers, docker, runs: plan.startupRuns, shim: times(samples.get(self.label)!) };
  if (inShell) result.shellEnvironment = { label: inShell.label, ...times(samples.get(inShell.label)!) };
  if (before) result.baseline = { label: before.label, ...times(samples.get(before.label)!) };
  return result;
}

async function countDockerRequests(plan: BenchPlan, pods: readonly PopulatedPod[]): Promise<PollingResult['dockerRequests']> {
  const { shim, raw } = await countBothSides(
    [`--log-level=${SHIM_LOG_LEVEL}`],
    (counter, client) => countRequests(counter, () => shimTick(client, pods), plan.countTicks, 2),
    (counter, docker) => countRequests(counter, () => rawTick(docker, pods), plan.countTicks, 2),
  );
  return { ticks: plan.countTicks, shim, raw };
}

/** Node, Docker and the machine, as every result records them. */
export async function environmentMeta(): Promise<Pick<BenchResult['meta'], 'node' | 'docker' | 'machine'>> {
  const docker = dockerApi();
  const [version, info] = await Promise.all([docker.version(), docker.info() as Promise<{ Driver?: string; CgroupDriver?: string }>]);
  const cpus = os.cpus();
  return {
    node: process.version,
    docker: {
      version: version.Version,
      apiVersion: version.ApiVersion,
      kernel: version.KernelVersion ?? os.release(),
      storageDriver: info.Driver ?? 'unknown',
      cgroupDriver: info.CgroupDriver ?? 'unknown',
    },
    machine: { cpuModel: cpus[0]?.model.trim() ?? 'unknown', cores: cpus.length, memoryBytes: os.totalmem(), os: `${os.type()} ${os.release()}` },
  };
}

async function meta(plan: BenchPlan, run: string, started: number): Promise<BenchResult['meta']> {
  return {
    date: new Date().toISOString(),
    mode: plan.mode,
    run,
    ...(await environmentMeta()),
    shimLogLevel: SHIM_LOG_LEVEL,
    lifecycleRounds: plan.lifecycleRounds,
    readIterations: plan.readIterations,
    durationSeconds: Math.round((Date.now() - started) / 1000),
  };
}

function writeResults(plan: BenchPlan, result: BenchResult): string {
  fs.mkdirSync(plan.outDir, { recursive: true });
  const json = `${JSON.stringify(result, null, 2)}\n`;
  const latest = path.join(plan.outDir, 'latest.json');
  fs.writeFileSync(latest, json);
  fs.writeFileSync(path.join(plan.outDir, `${result.meta.date.replace(/[:.]/g, '-')}.json`), json);
  return latest;
}

export async function main(argv: readonly string[]): Promise<number> {
  const plan = planFrom(argv);
  const started = Date.now();
  const bench: BenchRun = { run: newTestRun(), logRoot: tempDir('bench-logs') };
  // The timed shim's state directory (checkpoints, log positions) outlives it for the start-up part.
  const rootDir = tempDir('bench-root');
  let shim: ShimProcess | undefined;
  // The store is filled before the timed shim starts, for ImageFsInfo's figure as for the idle
  // part's (on a fresh machine it holds a few dozen files): the fresh shim's walk of it is waited out.
  return withFilledStore(bench, plan.idle.minStoreFiles, log, () =>
    withCleanUp(bench, [rootDir], () => shim, log, async () => {
      await ensureTestImages();
      log(`run ${bench.run}: starting the shim`);
      shim = await startShim({ args: [`--log-level=${SHIM_LOG_LEVEL}`], rootDir });
      const shimPid = shim.child.pid;
      if (shimPid === undefined) throw new Error('the shim has no PID');
      // Idle means settled: start-up's garbage is still in the heap the moment Version answers.
      await new Promise((r) => setTimeout(r, plan.idleSettleMs));
      const idleRss = memoryBytes(shimPid);
      const measured = await measure(plan, bench, rootDir, shim, shimPid, idleRss);
      // The idle part's node holds its own pods alone: the idle shim's cache, storage passes and
      // snapshot follow every container on the node, and the timed part's 200 would be measured
      // with them (bench/idle.js beside 200 more: idle RSS 68.8 and 68.9 MiB, alone 66.3 and 67.7).
      await shim.stop();
      shim = undefined;
      log(`the timed part's shim stopped, its ${await removeTestContainers({ run: bench.run })} container(s) removed`);
      log(`idle: ${plan.idle.pods} pods on a shim of their own, ${plan.idle.seconds} s without calls, then bursts: ${[...plan.idle.bursts].join(', ') || 'none'}`);
      const idle = await measureIdle({ run: newTestRun(), logRoot: tempDir('idle-logs') }, { ...plan.idle, log });
      const partial = { meta: await meta(plan, bench.run, started), ...measured, idle };
      const result: BenchResult = { ...partial, targets: checkTargets(partial) };
      const file = writeResults(plan, result);
      process.stdout.write(`${renderHeader(result)}\n\n${renderTable(result)}\n\n${renderTargets(result.targets)}\n\nJSON: ${file}\n`);
      return 0;
    }),
  );
}

runAsProgram(module, 'benchmark', main);
