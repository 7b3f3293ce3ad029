// Part: streams at Docker's speed (issue 30 point 3). Exec stdout and stdin and a port forward
// through the shim, over SPDY and over WebSocket, next to the docker CLI doing the same on the
// same container in the same run: throughput (MiB/s), and the shim's CPU per GiB copied
// (utime+stime from /proc). The client side of the shim is built here, as kubectl and crictl
// speak it (spdystream: no windows counted, 32 KiB stdin frames; the WebSocket channel
// protocols); the raw side is the docker CLI (`docker exec`, `docker exec -i`, and a
// `docker exec -i <pod> nc 127.0.0.1 <port>` relay for the port forward). Exec stdin has a
// fourth side, its floor: a bare Node relay in front of the same exec (stream-floor.ts). Given
// a second shim (bench/node-compare.ts: the same build on another Node), its transfers over both
// transports take the same turns.
//   node dist/bench/streams.js [--quick] [--profile] [--only=stdout,stdin,port-forward]
// --profile runs the shim under --cpu-prof and prints where its CPU went; --only measures only
// these cases.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Writable } from 'node:stream';
import type { CriClient } from '../test/support/client';
import { newTestRun, removePaths } from '../test/support/cleanup';
import { ensureTestImages, testDockerSocket } from '../test/support/images';
import { startShim, tempDir, type ShimProcess } from '../test/support/shim';
import { chunksOf, CLIENT_CHUNK, SpdySinkClient, wsSend, wsSink } from '../test/support/stream-sinks';
import { renderProfileSummary, summarizeProfile, type CpuProfile } from './cpu-profile';
import { renderTargets } from './report';
import { floorExec, startStreamFloor, type StreamFloor } from './stream-floor';
import { checkStreamTargets, renderStreamRows, type StreamCase, type StreamFloorRow, type StreamRow, type StreamSideResult, type StreamsResult, type Transport } from './streams-report';
import { clockTicksPerSecond, cpuMs, dockerdPid, machineBusyMs, untilQuiet } from './procfs';
import { type BenchRun, startShimPod, withCleanUp } from './workload';
import { runAsProgram } from './entry';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** What every client here writes to stdin, a chunk at a time. */
const ZEROS = Buffer.alloc(CLIENT_CHUNK);
/** The port the pod serves its bytes on, one connection at a time. */
const SERVE_PORT = 8000;

export interface StreamsPlan {
  rounds: number;
  /** How long to wait at most for the shim to be quiet before measuring (shimQuiet). */
  quietDeadlineMs: number;
  bytes: Record<StreamCase, number>;
  cases: readonly StreamCase[];
}

const CASES: readonly StreamCase[] = ['exec stdout', 'exec stdin', 'port forward'];
/** --only's names of the cases. */
const CASE_NAMES: Readonly<Record<string, StreamCase>> = { stdout: 'exec stdout', stdin: 'exec stdin', 'port-forward': 'port forward' };

export function streamsPlan(quick: boolean, only?: readonly string[]): StreamsPlan {
  const cases = only?.map((name) => CASE_NAMES[name] ?? failWith(`--only: ${name} is none of ${Object.keys(CASE_NAMES).join(', ')}`)) ?? CASES;
  return quick
    ? { rounds: 1, quietDeadlineMs: 30_000, cases, bytes: { 'exec stdout': 64 * MiB, 'exec stdin': 32 * MiB, 'port forward': 32 * MiB } }
    : { rounds: 3, quietDeadlineMs: 5 * 60_000, cases, bytes: { 'exec stdout': GiB, 'exec stdin': 512 * MiB, 'port forward': 256 * MiB } };
}

function failWith(message: string): never {
  throw new Error(message);
}

interface Sample {
  seconds: number;
  /** The CPU of the process between the client and Docker: the shim's (on the raw side, idle), or the floor's relay's. */
  relayCpuMs: number;
  dockerdCpuMs: number;
  /** The client's CPU: this process's own and its reaped children's (the docker CLI). */
  clientCpuMs: number;
  /** Every CPU of the machine together: the whole pipeline's (containerd's shim and dd too), and whatever else ran. */
  machineCpuMs: number;
}

/** This process's CPU and that of its children it reaped (utime, stime, cutime, cstime), in milliseconds. */
function clientCpuMs(): number {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).trim().split(/\s+/);
  return ((Number(fields[14 - 3]) + Number(fields[15 - 3]) + Number(fields[16 - 3]) + Number(fields[17 - 3])) * 1000) / clockTicksPerSecond();
}

/** Runs `transfer` (which answers the bytes it moved) and reads the CPU the relay (`relayPid`: the shim, or the floor) and dockerd spent on it. */
async function sampled(relayPid: number, dockerd: number, expected: number, transfer: () => Promise<number>): Promise<Sample> {
  const cpu0 = [cpuMs(relayPid), cpuMs(dockerd), clientCpuMs(), machineBusyMs()];
  const t0 = process.hrtime.bigint();
  const moved = await transfer();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu1 = [cpuMs(relayPid), cpuMs(dockerd), clientCpuMs(), machineBusyMs()];
  if (moved !== expected) throw new Error(`moved ${moved} bytes, expected ${expected}`);
  return { seconds, relayCpuMs: cpu1[0]! - cpu0[0]!, dockerdCpuMs: cpu1[1]! - cpu0[1]!, clientCpuMs: cpu1[2]! - cpu0[2]!, machineCpuMs: cpu1[3]! - cpu0[3]! };
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const round = (n: number, digits: number): number => Math.round(n * 10 ** digits) / 10 ** digits;

function sideOf(samples: readonly Sample[], bytes: number): StreamSideResult & { relayCpuSecondsPerGiB: number } {
  const gib = bytes / GiB;
  return {
    mibPerSecond: round(median(samples.map((s) => bytes / MiB / s.seconds)), 1),
    relayCpuSecondsPerGiB: round(median(samples.map((s) => s.relayCpuMs / 1000 / gib)), 2),
    dockerdCpuSecondsPerGiB: round(median(samples.map((s) => s.dockerdCpuMs / 1000 / gib)), 2),
    machineBusyCores: round(median(samples.map(busyCores)), 2),
  };
}

/** CPUs the machine kept busy during a transfer. */
const busyCores = (s: Sample): number => s.machineCpuMs / 1000 / s.seconds;

// ---- the commands in the container -------------------------------------------------------

/** Writes `bytes` to stdout in 1 MiB writes. */
const produce = (bytes: number): string[] => ['dd', 'if=/dev/zero', 'bs=1M', `count=${bytes / MiB}`];
/** Reads stdin to its end in whole MiB blocks; dd says on stderr how many (busybox's dd gives no byte count). */
const CONSUME = ['dd', 'of=/dev/null', 'bs=1M', 'iflag=fullblock'];
/** The bytes dd read: whole blocks only (every size here is whole MiB); -1 when a partial block came or dd said nothing. */
function bytesReadBy(ddStderr: string): number {
  const records = /(\d+)\+(\d+) records in/.exec(ddStderr);
  return records && records[2] === '0' ? Number(records[1]) * MiB : -1;
}
/** The pod's container: serves `bytes` to each connection on SERVE_PORT. */
export const serveCommand = (bytes: number): string[] => ['nc', '-ll', '-p', String(SERVE_PORT), '-e', ...produce(bytes)];

/** Writes `bytes` of zeros to `stdin` a chunk at a time, at the pace it drains (it stays open). */
async function writeZeros(stdin: Writable, bytes: number): Promise<void> {
  for (const chunk of chunksOf(ZEROS, bytes)) if (!stdin.write(chunk)) await new Promise((r) => stdin.once('drain', r));
}

// ---- raw Docker: the docker CLI ----------------------------------------------------------

/** `docker exec [-i] <container> <cmd>`: bytes of its stdout, its stderr; `stdin` bytes of zeros written to it. */
function dockerCli(containerId: string, cmd: string[], stdin: number | undefined): Promise<{ stdout: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('docker', ['exec', ...(stdin === undefined ? [] : ['-i']), containerId, ...cmd], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = 0;
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.length));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve({ stdout, stderr }) : reject(new Error(`docker exec ${cmd.join(' ')}: exit ${code}: ${stderr}`))));
    if (stdin === undefined) return void child.stdin.end();
    void writeZeros(child.stdin, stdin).then(() => child.stdin.end());
  });
}

// ---- the shim's clients ------------------------------------------------------------------

interface Exec {
  cmd: string[];
  stdin?: boolean;
}

async function execUrl(client: CriClient, containerId: string, exec: Exec): Promise<string> {
  const { url } = await client.runtime.Exec({ containerId, cmd: exec.cmd, stdin: exec.stdin === true, stdout: true, stderr: true, tty: false });
  return url;
}

/** An exec through the shim over SPDY: bytes of stdout, text of stderr, after writing `stdin` bytes. */
async function spdyExec(client: CriClient, containerId: string, exec: Exec, stdin?: number): Promise<{ stdout: number; stderr: string }> {
  const spdy = await SpdySinkClient.connect(await execUrl(client, containerId, exec), 'v4.channel.k8s.io');
  try {
    const error = await spdy.open({ streamType: 'error' }, { fin: true, keep: true });
    const input = stdin !== undefined ? await spdy.open({ streamType: 'stdin' }) : undefined;
    const out = await spdy.open({ streamType: 'stdout' }, { fin: true });
    const err = await spdy.open({ streamType: 'stderr' }, { fin: true, keep: true });
    if (input !== undefined) await spdy.send(input, chunksOf(ZEROS, stdin!));
    const [stdout] = await Promise.all([spdy.drained(out), spdy.drained(err), spdy.drained(error)]);
    const status = spdy.kept(error);
    if (status !== '' && !status.includes('"Success"')) throw new Error(`exec failed: ${status}`);
    return { stdout, stderr: spdy.kept(err) };
  } finally {
    spdy.close();
  }
}

/** The same over WebSocket (v5.channel.k8s.io, binary). */
async function wsExec(client: CriClient, containerId: string, exec: Exec, stdin?: number): Promise<{ stdout: number; stderr: string }> {
  const link = await wsSink(await execUrl(client, containerId, exec), 'v5.channel.k8s.io', {}, [2, 3], { zeroMask: true });
  if (stdin !== undefined) await wsSend(link, 0, chunksOf(ZEROS, stdin));
  await link.closed;
  const status = link.kept(3);
  if (status !== '' && !status.includes('"Success"')) throw new Error(`exec failed: ${status}`);
  return { stdout: link.received.get(1) ?? 0, stderr: link.kept(2) };
}

/** One port-forward connection to SERVE_PORT through the shim over SPDY: the bytes it served. */
async function spdyPortForward(client: CriClient, podSandboxId: string): Promise<number> {
  const { url } = await client.runtime.PortForward({ podSandboxId, port: [SERVE_PORT] });
  const spdy = await SpdySinkClient.connect(url, 'portforward.k8s.io');
  try {
    const headers = { port: String(SERVE_PORT), requestID: '0' };
    const error = await spdy.open({ streamType: 'error', ...headers }, { fin: true, keep: true });
    const data = await spdy.open({ streamType: 'data', ...headers });
    const bytes = await spdy.drained(data);
    if (spdy.kept(error) !== '') throw new Error(`port forward failed: ${spdy.kept(error)}`);
    return bytes;
  } finally {
    spdy.close();
  }
}

/** The same over kubelet's WebSocket channel protocol: data on channel 0 after the port's 2 bytes. */
async function wsPortForward(client: CriClient, podSandboxId: string): Promise<number> {
  const { url } = await client.runtime.PortForward({ podSandboxId, port: [SERVE_PORT] });
  const link = await wsSink(`${url}?port=${SERVE_PORT}`, 'v4.channel.k8s.io', {}, [], { zeroMask: true });
  await link.closed;
  return (link.received.get(0) ?? 0) - 2;
}

// ---- the part ----------------------------------------------------------------------------

/** A shim the transfers go through: its client, and its PID for its CPU. */
export interface StreamingShim {
  client: CriClient;
  pid: number;
}

interface Target {
  pod: string;
  containerId: string;
  shim: StreamingShim;
  /** A second shim in the same turns (the same build on another Node). */
  other?: StreamingShim;
  /** Exec stdin's floor, in front of the same container (when that case is measured). */
  floor?: StreamFloor;
}

/** The second shim's sides: its transfers over each transport. */
type OtherSide = `other ${Transport}`;
type Side = 'raw' | Transport | 'floor' | OtherSide;

/** The shim a shim side goes through, and over which transport. */
function viaShim(target: Target, side: Transport | OtherSide): { client: CriClient; transport: Transport } {
  if (side === 'SPDY' || side === 'WebSocket') return { client: target.shim.client, transport: side };
  return { client: otherOf(target).client, transport: side === 'other SPDY' ? 'SPDY' : 'WebSocket' };
}

/** One transfer of `kase` on `side`; answers the bytes moved. */
function transfer(target: Target, kase: StreamCase, side: Side, bytes: number): Promise<number> {
  const { containerId, pod } = target;
  if (side === 'raw') {
    if (kase === 'exec stdout') return dockerCli(containerId, produce(bytes), undefined).then((r) => r.stdout);
    if (kase === 'exec stdin') return dockerCli(containerId, CONSUME, bytes).then((r) => bytesReadBy(r.stderr));
    return dockerCli(containerId, ['nc', '127.0.0.1', String(SERVE_PORT)], 0).then((r) => r.stdout);
  }
  if (side === 'floor') {
    if (kase !== 'exec stdin') throw new Error(`${kase} has no floor`);
    return floorExec(floorOf(target), (stdin) => writeZeros(stdin, bytes)).then((r) => bytesReadBy(r.stderr));
  }
  const { client, transport } = viaShim(target, side);
  switch (kase) {
    case 'exec stdout':
      return (transport === 'SPDY' ? spdyExec : wsExec)(client, containerId, { cmd: produce(bytes) }).then((r) => r.stdout);
    case 'exec stdin':
      return (transport === 'SPDY' ? spdyExec : wsExec)(client, containerId, { cmd: CONSUME, stdin: true }, bytes).then((r) => bytesReadBy(r.stderr));
    case 'port forward':
      return transport === 'SPDY' ? spdyPortForward(client, pod) : wsPortForward(client, pod);
  }
}

const SIDES: readonly Side[] = ['raw', 'SPDY', 'WebSocket'];
const OTHER_SIDES: readonly OtherSide[] = ['other SPDY', 'other WebSocket'];
/** The cases measured on the floor too: exec stdin, whose target (0.9 of the CLI) a bare relay may not reach here. */
const FLOOR_CASES: readonly StreamCase[] = ['exec stdin'];

const sidesOf = (kase: StreamCase, target: Target): readonly Side[] => [...SIDES, ...(FLOOR_CASES.includes(kase) ? ['floor' as const] : []), ...(target.other ? OTHER_SIDES : [])];

function floorOf(target: Target): StreamFloor {
  return target.floor ?? failWith('the floor side was asked for with no floor started');
}

function otherOf(target: Target): StreamingShim {
  return target.other ?? failWith('the second shim\'s side was asked for with no second shim');
}

/** The process between the client and Docker on `side` (the raw side's is the shim, idle then), and what the log calls it. */
function relayOf(target: Target, side: Side): { pid: number; name: string } {
  if (side === 'floor') return { pid: floorOf(target).pid, name: 'relay' };
  if (side === 'other SPDY' || side === 'other WebSocket') return { pid: otherOf(target).pid, name: 'other shim' };
  return { pid: target.shim.pid, name: 'shim' };
}

/**
 * Measures every case on every side, the sides taking turns round by round (which goes first
 * rotates). The pod is the shim's; `other`, a second shim, streams from the same pod.
 */
export async function measureStreams(client: CriClient, bench: BenchRun, shimPid: number, plan: StreamsPlan, log: (m: string) => void, other?: StreamingShim): Promise<StreamsResult> {
  const { pod, containerId } = await startShimPod(client, bench, 'streams', serveCommand(plan.bytes['port forward']));
  let floor: StreamFloor | undefined;
  try {
    if (plan.cases.some((c) => FLOOR_CASES.includes(c))) floor = await startStreamFloor(testDockerSocket(), containerId, CONSUME);
    return await measureCases({ pod: pod.id, containerId, shim: { client, pid: shimPid }, ...(other ? { other } : {}), ...(floor ? { floor } : {}) }, plan, log);
  } finally {
    await floor?.stop();
    await client.runtime.StopPodSandbox({ podSandboxId: pod.id });
    await client.runtime.RemovePodSandbox({ podSandboxId: pod.id });
  }
}

/**
 * Waits (at most `deadlineMs`) for a fresh shim to be quiet: it measures the image layers' disk
 * usage first (src/storage, up to a quarter of a core for as long as the layers take), which the
 * CPU per GiB would count.
 */
async function shimQuiet(shimPid: number, deadlineMs: number, log: (m: string) => void): Promise<void> {
  const { waitedMs, quiet } = await untilQuiet(shimPid, deadlineMs);
  const seconds = (waitedMs / 1000).toFixed(0);
  log(quiet ? `the shim is quiet after ${seconds} s` : `the shim is still busy after ${seconds} s: its CPU per GiB counts that too`);
}

async function measureCases(target: Target, plan: StreamsPlan, log: (m: string) => void): Promise<StreamsResult> {
  const dockerd = dockerdPid();
  const rows: StreamRow[] = [];
  const otherRows: StreamRow[] = [];
  const floorRows: StreamFloorRow[] = [];
  for (const shim of [target.shim, ...(target.other ? [target.other] : [])]) await shimQuiet(shim.pid, plan.quietDeadlineMs, log);
  for (const kase of plan.cases) {
    const bytes = plan.bytes[kase];
    const sides = sidesOf(kase, target);
    const samples = new Map<Side, Sample[]>(sides.map((s) => [s, []]));
    // One uncounted transfer a side first: the relay process, JIT, Docker's exec paths.
    for (const side of sides) await transfer(target, kase, side, Math.min(bytes, 8 * MiB)).catch(() => undefined);
    for (let r = 0; r < plan.rounds; r++) {
      for (let i = 0; i < sides.length; i++) {
        const side = sides[(i + r) % sides.length]!;
        const relay = relayOf(target, side);
        const sample = await sampled(relay.pid, dockerd, bytes, () => transfer(target, kase, side, bytes));
        samples.get(side)!.push(sample);
        log(`${kase} ${side}: ${(bytes / MiB / sample.seconds).toFixed(0)} MiB/s, ${relay.name} ${sample.relayCpuMs} ms, dockerd ${sample.dockerdCpuMs} ms, client ${sample.clientCpuMs} ms; machine ${sample.machineCpuMs} ms, ${busyCores(sample).toFixed(2)} cores busy`);
      }
    }
    const { relayCpuSecondsPerGiB: _, ...raw } = sideOf(samples.get('raw')!, bytes);
    const shimRow = (transport: Transport, side: Transport | OtherSide): StreamRow => {
      const { relayCpuSecondsPerGiB, ...shim } = sideOf(samples.get(side)!, bytes);
      return { case: kase, transport, bytes, rounds: plan.rounds, shim: { ...shim, shimCpuSecondsPerGiB: relayCpuSecondsPerGiB }, raw, ratio: round(shim.mibPerSecond / raw.mibPerSecond, 2) };
    };
    for (const transport of ['SPDY', 'WebSocket'] as const) {
      rows.push(shimRow(transport, transport));
      if (target.other) otherRows.push(shimRow(transport, `other ${transport}`));
    }
    const floorSamples = samples.get('floor');
    if (floorSamples) {
      const floor = sideOf(floorSamples, bytes);
      floorRows.push({ case: kase, bytes, rounds: plan.rounds, floor, raw, ratio: round(floor.mibPerSecond / raw.mibPerSecond, 2) });
    }
  }
  return { rows, ...(otherRows.length > 0 ? { otherShim: otherRows } : {}), ...(floorRows.length > 0 ? { floor: floorRows } : {}) };
}

async function main(argv: readonly string[]): Promise<number> {
  const unknown = argv.filter((a) => a !== '--quick' && a !== '--profile' && !a.startsWith('--only='));
  if (unknown.length > 0) throw new Error(`unknown argument(s): ${unknown.join(' ')}; usage: streams.js [--quick] [--profile] [--only=stdout,stdin,port-forward]`);
  const plan = streamsPlan(argv.includes('--quick'), argv.find((a) => a.startsWith('--only='))?.slice('--only='.length).split(','));
  const profDir = argv.includes('--profile') ? tempDir('streams-prof') : undefined;
  const bench: BenchRun = { run: newTestRun(), logRoot: tempDir('bench-logs') };
  const log = (m: string): void => void process.stderr.write(`[streams ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
  let shim: ShimProcess | undefined;
  return withCleanUp(bench, profDir ? [profDir] : [], () => shim, log, async () => {
    await ensureTestImages();
    shim = await startShim({ args: ['--log-level=info'], ...(profDir ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] } : {}) });
    const result = await measureStreams(shim.client, bench, shim.child.pid!, plan, log);
    process.stdout.write(`${renderStreamRows(result).join('\n')}\n\n${renderTargets(checkStreamTargets(result))}\n`);
    if (profDir) {
      await shim.stop();
      shim = undefined;
      const file = fs.readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
      if (file) process.stdout.write(`\n${renderProfileSummary(summarizeProfile(JSON.parse(fs.readFileSync(path.join(profDir, file), 'utf8')) as CpuProfile, 30))}\n`);
    }
    removePaths(...(profDir ? [profDir] : []));
    return 0;
  });
}

runAsProgram(module, 'streams bench', main);
