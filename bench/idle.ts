// Issue 30 points 1 and 4: what a shim costs when nothing happens, and whether the memory of a
// burst comes back. Populates a node of pods through a fresh shim, lets it go idle, measures the
// CPU the shim and dockerd use while no call comes (scaled to 30 s) and the shim's RSS; then runs
// three bursts (fuzzed calls, a list of 1,000 containers, 1 GiB of exec stdout) and reads the RSS
// right after each and again RECOVER_MS later. Removes everything it made.
//   node dist/bench/idle.js [--pods=50] [--seconds=60] [--settle=60] [--bursts=fuzz,list,stream] [--store-files=100000] [--cpu-prof=DIR] [--debug-log=FILE]
// --cpu-prof: the idle shim runs under `node --cpu-prof` (the profiler's own cost included), and
// the idle window's profile is summarised. --debug-log: the shim logs at debug level, written to FILE.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { CriClient } from '../test/support/client';
import { newTestRun } from '../test/support/cleanup';
import { CONTAINER_TYPE_LABEL } from '../src/conventions/labels';
import { dockerApi, ensureTestImages } from '../test/support/images';
import { mapLimit } from '../test/support/map-limit';
import { importUniqueImage } from '../test/support/registry';
import { diskUsage } from '../src/util/disk-usage';
import { startShim, tempDir, type ShimProcess } from '../test/support/shim';
import { openStream, spdyConnect } from '../test/support/streaming-clients';
import { type CpuProfile, renderProfileSummary, summarizeProfile } from './cpu-profile';
import { clockTicksPerSecond, cpuMs, cpuTicksFromStat, dockerdPid, memoryBytes, resetPeakMemory, untilQuiet } from './procfs';
import { START_UP_WALK_DEADLINE_MS } from './lifecycle';
import { type BurstResult, checkIdleTargets, IDLE_TARGETS, type IdleResult, RECOVER_MS, recoveredRssTarget, renderIdle, residentByMapping } from './idle-report';
import { censusEnv, startCensus, timerRuns } from '../test/support/census';
import { populate, type PopulatedPod } from './reads';
import { type BenchRun, containerConfig, withCleanUp } from './workload';
import { countOption, runAsProgram } from './entry';

export const FUZZ_CALLS = 10_000;
export const LISTED_CONTAINERS = 1_000;
export const STREAMED_BYTES = 2 ** 30;
export const BURSTS = ['fuzz', 'list', 'stream'] as const;
const MiB = 2 ** 20;
const mib = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`;

/** The idle shim's memory: its RSS and what holds it, by mapping (residentByMapping). */
export function memoryBreakdown(pid: number): Record<string, number> {
  const out: Record<string, number> = { rss: memoryBytes(pid) };
  try {
    Object.assign(out, residentByMapping(fs.readFileSync(`/proc/${pid}/smaps`, 'utf8'), fs.readlinkSync(`/proc/${pid}/exe`)));
  } catch {
    // The shim ended meanwhile: the RSS alone.
  }
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** CPU time (ms) of each thread of `pid`, by thread name (the main thread, V8's workers, libuv's). */
function cpuByThread(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      out.set(name, (out.get(name) ?? 0) + (cpuTicksFromStat(fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')) * 1000) / clockTicksPerSecond());
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

/** CPU of the shim (and of each of its kinds of thread) and of dockerd over `seconds` with no call, per 30 s. */
async function idleCpu(shimPid: number, dockerd: number, seconds: number): Promise<{ shim: number; dockerd: number; threads: Record<string, number> }> {
  const s0 = cpuMs(shimPid);
  const d0 = cpuMs(dockerd);
  const t0 = cpuByThread(shimPid);
  await sleep(seconds * 1000);
  const per30 = (ms: number): number => Math.round((ms * 30) / seconds);
  const threads = Object.fromEntries([...cpuByThread(shimPid)].map(([name, ms]) => [name, per30(ms - (t0.get(name) ?? 0))]));
  return { shim: per30(cpuMs(shimPid) - s0), dockerd: per30(cpuMs(dockerd) - d0), threads };
}

/**
 * Docker's events about any shim's containers between two times (Unix seconds): on a shared node
 * other shims' containers change, and the state cache follows them: change, not idle.
 */
async function shimContainerEvents(since: number, until: number): Promise<number> {
  const stream = (await dockerApi().getEvents({ since, until, filters: { type: ['container'], label: [CONTAINER_TYPE_LABEL] } })) as NodeJS.ReadableStream;
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text.split('\n').filter((l) => l.trim() !== '').length;
}

/** As a burst begins: its peak counted from here, and the shim's CPU so far. */
function burstBegins(pid: number): { cpuBeforeMs: number } {
  resetPeakMemory(pid);
  return { cpuBeforeMs: cpuMs(pid) };
}

/**
 * The burst's peak and its RSS right after, then each second until RECOVER_MS, when it should be
 * back near `idleRssBytes` (recoveredRssTarget); `began`: burstBegins' answer.
 */
async function afterBurst(burst: string, pid: number, began: { cpuBeforeMs: number }, idleRssBytes: number, log: (m: string) => void): Promise<BurstResult> {
  const afterBytes = memoryBytes(pid);
  const peakBytes = memoryBytes(pid, 'VmHWM');
  const burstCpuMs = Math.round(cpuMs(pid) - began.cpuBeforeMs);
  let underTargetAfterS: number | undefined;
  for (let s = 1; s <= RECOVER_MS / 1000; s++) {
    await sleep(1000);
    if (underTargetAfterS === undefined && memoryBytes(pid) <= recoveredRssTarget(idleRssBytes)) underTargetAfterS = s;
  }
  const recoveredMemory = memoryBreakdown(pid);
  const result = { burst, afterBytes, peakBytes, recoveredBytes: recoveredMemory.rss!, recoveredMemory, underTargetAfterS, burstCpuMs };
  log(`${burst}: shim CPU ${burstCpuMs} ms; RSS ${mib(peakBytes)} at its peak, ${mib(result.afterBytes)} right after, ${mib(result.recoveredBytes)} ${RECOVER_MS / 1000} s later`);
  return result;
}

/**
 * Calls no kubelet sends: random methods with random IDs, filters, label selectors and sizes;
 * each answer (most are errors) is awaited, CONCURRENCY at a time.
 */
async function fuzzedCalls(client: CriClient, pods: readonly PopulatedPod[], count: number): Promise<void> {
  const rnd = (n: number): number => Math.floor(Math.random() * n);
  const hex = (bytes: number): string => randomBytes(bytes).toString('hex');
  const junk = (): string => randomBytes(1 + rnd(200)).toString('latin1');
  const someId = (): string => [hex(32), hex(rnd(8)), junk(), pods[rnd(pods.length)]?.containerId ?? '', pods[rnd(pods.length)]?.pod.id.slice(0, 1 + rnd(12)) ?? ''][rnd(5)]!;
  const labels = (): Record<string, string> => Object.fromEntries(Array.from({ length: rnd(20) }, () => [junk().slice(0, 60), junk()]));
  const calls: Array<() => Promise<unknown>> = [
    () => client.runtime.ContainerStatus({ containerId: someId(), verbose: rnd(2) === 0 }),
    () => client.runtime.PodSandboxStatus({ podSandboxId: someId(), verbose: rnd(2) === 0 }),
    () => client.runtime.ListContainers({ filter: { id: someId(), labelSelector: labels() } }),
    () => client.runtime.ListPodSandbox({ filter: { labelSelector: labels() } }),
    () => client.runtime.ListContainerStats({ filter: { podSandboxId: someId(), labelSelector: labels() } }),
    () => client.runtime.ContainerStats({ containerId: someId() }),
    () => client.runtime.PodSandboxStats({ podSandboxId: someId() }),
    () => client.images.ImageStatus({ image: { image: junk() } }),
    () => client.images.ListImages({ filter: { image: { image: junk() } } }),
    () => client.runtime.StopContainer({ containerId: hex(32), timeout: String(rnd(10)) }),
    () => client.runtime.RemoveContainer({ containerId: hex(32) }),
    () => client.runtime.ExecSync({ containerId: hex(32), cmd: [junk()], timeout: '1' }),
    () => client.runtime.UpdateContainerResources({ containerId: hex(32), linux: { cpuShares: String(rnd(1e6)), memoryLimitInBytes: String(rnd(1e9)) } }),
    () => client.runtime.ReopenContainerLog({ containerId: someId() }),
    () => client.runtime.Exec({ containerId: someId(), cmd: [junk()], stdout: true }),
  ];
  await mapLimit(Array.from({ length: count }, () => calls[rnd(calls.length)]!), 16, (call) => call().catch(() => undefined));
}

/** Creates `count` containers (created, never started) in `pod`, lists them all a few times; resolves with their IDs. */
async function listManyContainers(client: CriClient, bench: BenchRun, pod: PopulatedPod, count: number): Promise<string[]> {
  const ids = await mapLimit(Array.from({ length: count }, (_, i) => i), 4, async (i) => {
    const { containerId } = await client.runtime.CreateContainer({
      podSandboxId: pod.pod.id,
      config: containerConfig(bench, `listed${i}`, ['true']),
      sandboxConfig: pod.pod.config,
    });
    return containerId;
  });
  for (let i = 0; i < 5; i++) {
    const { containers } = await client.runtime.ListContainers({});
    if (containers.length < count) throw new Error(`ListContainers answered ${containers.length} containers, fewer than the ${count} made`);
    await client.runtime.ListPodSandbox({});
  }
  return ids;
}

/** `bytes` of exec stdout through the shim's streaming URL (SPDY), counted and dropped. */
async function streamExecStdout(client: CriClient, containerId: string, bytes: number): Promise<void> {
  const { url } = await client.runtime.Exec({ containerId, cmd: ['head', '-c', String(bytes), '/dev/zero'], stdout: true });
  const { conn, socket } = await spdyConnect(url, ['v4.channel.k8s.io']);
  try {
    const error = await openStream(conn, { streamType: 'error' });
    error.resume();
    error.end();
    const stdout = await openStream(conn, { streamType: 'stdout' });
    stdout.end();
    let got = 0;
    await new Promise<void>((resolve, reject) => {
      stdout.on('data', (c: unknown) => (got += (c as Buffer).length));
      stdout.once('end', resolve);
      stdout.once('close', resolve);
      stdout.once('error', reject);
    });
    if (got !== bytes) throw new Error(`exec stdout carried ${got} bytes, not ${bytes}`);
  } finally {
    socket.destroy();
  }
}

export interface IdleOptions {
  pods: number;
  seconds: number;
  /** Seconds after populating before the idle window starts (the first storage passes, start-up's garbage). */
  settleSeconds: number;
  /**
   * Then how long at most to wait for the shim to be quiet (untilQuiet; 0: not at all): a fresh
   * shim's root directory has no saved layer figures, so it first walks every layer of Docker's
   * image store at a quarter of a core, and under load that one-off can outlast the settle
   * (164,000 files here: a profiled run beside CI found its tail in the idle window).
   */
  quietDeadlineMs: number;
  /** Which bursts run: fuzz, list, stream. */
  bursts: ReadonlySet<string>;
  /**
   * Docker's store holds at least this many files during the idle window (0: as it is): an image
   * of small files fills it up to that first, and is removed at the end. What an idle shim costs
   * must not grow with the store (issue 44: >= 100,000).
   */
  minStoreFiles: number;
  cpuProfDir?: string | undefined;
  /** Run the shim at debug level and write its log here at the end. */
  debugLog?: string | undefined;
  log: (message: string) => void;
}

/** The idle part: a node of `pods` pods (a pause and a sleeping container each) through a fresh shim. */
export async function measureIdle(bench: BenchRun, opts: IdleOptions): Promise<IdleResult> {
  const { log } = opts;
  let shim: ShimProcess | undefined;
  const rootDir = tempDir('idle-root');
  return withFilledStore(bench, opts.minStoreFiles, log, (storeFiles) =>
    withCleanUp(bench, [rootDir], () => shim, log, async () => {
      await ensureTestImages();
      const nodeFlags = opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] : undefined;
      const censusFile = path.join(rootDir, '..', `run-census-${process.pid}.json`);
      shim = await startShim({ args: [`--log-level=${opts.debugLog ? 'debug' : 'info'}`], rootDir, nodeFlags, env: censusEnv(censusFile) });
      const pid = shim.child.pid!;
      const pods: PopulatedPod[] = [];
      log(`populating ${opts.pods} pods`);
      await populate(shim.client, bench, pods, opts.pods * 2, 4);
      log(`settling ${opts.settleSeconds} s, then ${opts.seconds} s without calls`);
      await sleep(opts.settleSeconds * 1000);
      if (opts.quietDeadlineMs > 0) {
        const { waitedMs, quiet } = await untilQuiet(pid, opts.quietDeadlineMs);
        log(quiet ? `the shim was quiet after ${Math.round(waitedMs / 1000)} s more` : `the shim was still busy after ${Math.round(waitedMs / 1000)} s more; measuring anyway`);
      }
      const windowStart = Math.floor(Date.now() / 1000);
      const endCensus = startCensus(shim.child, censusFile);
      const cpu = await idleCpu(pid, dockerdPid(), opts.seconds);
      const census = await endCensus();
      const changesDuringIdle = await shimContainerEvents(windowStart, Math.ceil(Date.now() / 1000));
      const idleMemory = memoryBreakdown(pid);
      log(`idle: shim ${cpu.shim} ms (${JSON.stringify(cpu.threads)}), dockerd ${cpu.dockerd} ms per 30 s; RSS ${mib(idleMemory.rss!)}; ${changesDuringIdle} events of shim containers meanwhile; ${timerRuns(census)} timer-driven runs`);
      const bursts: BurstResult[] = [];
      if (opts.bursts.has('fuzz')) {
        log(`burst: ${FUZZ_CALLS} fuzzed calls`);
        const began = burstBegins(pid);
        await fuzzedCalls(shim.client, pods, FUZZ_CALLS);
        bursts.push(await afterBurst(`${FUZZ_CALLS} fuzzed calls`, pid, began, idleMemory.rss!, log));
      }
      if (opts.bursts.has('list')) {
        log(`burst: ${LISTED_CONTAINERS} containers created, listed and removed`);
        const began = burstBegins(pid);
        const listed = await listManyContainers(shim.client, bench, pods[0]!, LISTED_CONTAINERS);
        log(`RSS with ${LISTED_CONTAINERS} containers listed: ${mib(memoryBytes(pid))}`);
        await mapLimit(listed, 4, (containerId) => shim!.client.runtime.RemoveContainer({ containerId }));
        bursts.push(await afterBurst(`ListContainers over ${LISTED_CONTAINERS} containers (created, listed, removed)`, pid, began, idleMemory.rss!, log));
      }
      if (opts.bursts.has('stream')) {
        log(`burst: ${STREAMED_BYTES / MiB} MiB of exec stdout`);
        const began = burstBegins(pid);
        await streamExecStdout(shim.client, pods[0]!.containerId, STREAMED_BYTES);
        bursts.push(await afterBurst(`${STREAMED_BYTES / MiB} MiB of exec stdout`, pid, began, idleMemory.rss!, log));
      }
      if (opts.debugLog) fs.writeFileSync(opts.debugLog, shim.output());
      if (opts.cpuProfDir) {
        await shim.stop();
        shim = undefined;
        for (const f of fs.readdirSync(opts.cpuProfDir).filter((n) => n.endsWith('.cpuprofile'))) {
          const profile = JSON.parse(fs.readFileSync(path.join(opts.cpuProfDir, f), 'utf8')) as CpuProfile;
          log(`profile ${f}, the idle window only:\n${renderProfileSummary(summarizeProfile(lastSeconds(profile, idleWindowUs(opts)), 25))}`);
        }
      }
      return { pods: opts.pods, seconds: opts.seconds, shimCpuMsPer30s: cpu.shim, shimThreadsCpuMsPer30s: cpu.threads, changesDuringIdle, dockerdCpuMsPer30s: cpu.dockerd, idleRssBytes: idleMemory.rss!, idleMemory, bursts, census, storeFiles };
    }),
  );
}

/** Docker's storage directory (its root and driver) and the files it holds. */
export async function dockerStoreFiles(): Promise<{ dir: string; files: number }> {
  const info = await dockerApi().info();
  const dir = path.join(String(info.DockerRootDir), String(info.Driver));
  return { dir, files: (await diskUsage([dir])).inodes };
}

/**
 * Runs `body` with Docker's image store holding at least `min` files (told to it): below that, an
 * image of small files fills it up first, removed once `body` is done. A store full already
 * (the bench's run fills it before its timed part) is left as it is.
 */
export async function withFilledStore<T>(bench: BenchRun, min: number, log: (m: string) => void, body: (storeFiles: number) => Promise<T>): Promise<T> {
  const filler = `cri-docker-shim-bench/store-filler:${bench.run}`;
  try {
    const { files } = await dockerStoreFiles();
    if (files >= min) return await body(files);
    // With some to spare: the store's count moves with other containers on a shared node.
    const adding = Math.ceil((min - files) * 1.1);
    log(`Docker's store holds ${files} files: adding an image of ${adding} small files`);
    await importUniqueImage(filler, [], 1024, adding);
    return await body((await dockerStoreFiles()).files);
  } finally {
    await dockerApi().getImage(filler).remove({ force: true }).catch(() => undefined);
  }
}

/** How far before the profile's end the idle window starts (it ends where the profile does, without bursts). */
function idleWindowUs(opts: IdleOptions): number {
  return (opts.seconds + opts.bursts.size * (RECOVER_MS / 1000 + 120)) * 1e6;
}

/** The profile's samples of its last `us` microseconds. */
function lastSeconds(profile: CpuProfile, us: number): CpuProfile {
  let t = profile.startTime;
  const from = profile.endTime - us;
  const keep = profile.timeDeltas.map((d) => (t += d) >= from);
  return { ...profile, samples: profile.samples.filter((_, i) => keep[i]), timeDeltas: profile.timeDeltas.filter((_, i) => keep[i]) };
}

async function main(argv: readonly string[]): Promise<number> {
  const known = ['--pods=', '--seconds=', '--settle=', '--bursts=', '--store-files=', '--cpu-prof=', '--debug-log='];
  const unknown = argv.filter((a) => !known.some((k) => a.startsWith(k)));
  if (unknown.length > 0) throw new Error(`unknown argument(s): ${unknown.join(' ')}; usage: idle.js [--pods=50] [--seconds=60] [--settle=60] [--bursts=fuzz,list,stream] [--store-files=100000] [--cpu-prof=DIR] [--debug-log=FILE]`);
  const cpuProf = argv.find((a) => a.startsWith('--cpu-prof='))?.slice('--cpu-prof='.length);
  const unknownBursts = (argv.find((a) => a.startsWith('--bursts='))?.slice('--bursts='.length) ?? '').split(',').filter((b) => b !== '' && !(BURSTS as readonly string[]).includes(b));
  if (unknownBursts.length > 0) throw new Error(`--bursts: ${unknownBursts.join(',')}: not one of ${BURSTS.join(',')}`);
  const bench: BenchRun = { run: newTestRun(), logRoot: tempDir('idle-logs') };
  const result = await measureIdle(bench, {
    pods: countOption(argv, 'pods', 50),
    seconds: Math.max(1, countOption(argv, 'seconds', 60)),
    settleSeconds: countOption(argv, 'settle', 60),
    quietDeadlineMs: START_UP_WALK_DEADLINE_MS,
    bursts: new Set((argv.find((a) => a.startsWith('--bursts='))?.slice('--bursts='.length) ?? BURSTS.join(',')).split(',').filter((b) => b !== '')),
    minStoreFiles: countOption(argv, 'store-files', IDLE_TARGETS.storeFiles),
    cpuProfDir: cpuProf === undefined ? undefined : path.resolve(cpuProf),
    debugLog: argv.find((a) => a.startsWith('--debug-log='))?.slice('--debug-log='.length),
    log: (m) => process.stderr.write(`[idle ${new Date().toISOString().slice(11, 19)}] ${m}\n`),
  });
  process.stdout.write(`${renderIdle(result)}\n\n${checkIdleTargets(result).map((c) => `${c.pass ? 'PASS' : 'MISS'}  ${c.target}: ${c.value}`).join('\n')}\n`);
  return 0;
}

runAsProgram(module, 'idle benchmark', main);
