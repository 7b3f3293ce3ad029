// Two shims in one run, this build on the bench's Node (the project's, through
// scripts/project-node.mjs) and another side: this build on `--other-node`, or another build
// (`--other-build=DIR`, a checkout built with `npm run build`, say the commit before a change) on
// the bench's Node, or both. The sides take turns in four of the bench's parts, with
// the bench's own machinery: fresh shims' idle RSS (run.ts's), the lifecycle rows (runLifecycle
// with a second shim beside the raw side), the streams rows (measureStreams with a second shim)
// and start-up (measureStartup with the two as its builds). The other Node runs a copy of the
// build whose code cache it made itself, as a build made on it would have: V8 refuses a cache
// another Node made, and that side would pay for it. Prints one table; writes JSON; removes
// everything it made.
//   node scripts/project-node.mjs dist/bench/node-compare.js --other-node=/usr/bin/node [--quick] [--out=DIR]
//   node scripts/project-node.mjs dist/bench/node-compare.js --other-build=../before [--quick] [--out=DIR]
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { newTestRun } from '../test/support/cleanup';
import { dockerApi, ensureTestImages } from '../test/support/images';
import { MAIN_JS, startShim, tempDir, type ShimProcess } from '../test/support/shim';
import { memoryBreakdown } from './idle';
import { LIFECYCLE_CALLS, runLifecycle, START_UP_WALK_DEADLINE_MS, waitForStartUpWalk } from './lifecycle';
import { type NodeCompareResult, type NodeSideInfo, renderNodeCompareHeader, renderNodeCompareTable } from './node-compare-report';
import { populate, type PopulatedPod } from './reads';
import { environmentMeta, SHIM_LOG_LEVEL } from './run';
import { measureStartup, serviceEnvironmentOn, type StartupBuild, type StartupSample } from './startup';
import { summarize } from './stats';
import { measureStreams, streamsPlan, type StreamsPlan } from './streams';
import { type BenchRun, withCleanUp } from './workload';
import { runAsProgram } from './entry';

export interface NodeComparePlan {
  mode: 'full' | 'quick';
  /** The other side's Node binary (absolute): the bench's own unless --other-node. */
  otherNode: string;
  /** The other side's build: a checkout's root (absolute), or undefined for this build. */
  otherBuild: string | undefined;
  /** Fresh shims per side whose idle RSS is read, and how long each sits after its first answer. */
  idleStarts: number;
  idleSettleMs: number;
  lifecycleRounds: number;
  lifecycleWarmup: number;
  /** How long the lifecycle part waits at most for each fresh shim to be quiet (0: it does not wait). */
  quietDeadlineMs: number;
  streams: StreamsPlan;
  /** Containers on the node (pods of two) when start-up is timed. */
  containers: number;
  startupRuns: number;
  startupWarmup: number;
  outDir: string;
}

const REPO = path.resolve(__dirname, '../..');
const CODE_CACHE_SCRIPT = path.join(REPO, 'scripts', 'code-cache.mjs');
const USAGE = 'usage: node-compare.js --other-node=PATH | --other-build=DIR (or both) [--quick] [--out=DIR]';

export function nodeComparePlanFrom(argv: readonly string[]): NodeComparePlan {
  const value = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const unknown = argv.filter((a) => a !== '--quick' && !a.startsWith('--other-node=') && !a.startsWith('--other-build=') && !a.startsWith('--out='));
  if (unknown.length > 0) throw new Error(`unknown argument(s): ${unknown.join(' ')}; ${USAGE}`);
  const otherNode = value('other-node');
  const otherBuild = value('other-build');
  if (!otherNode && !otherBuild) throw new Error(`--other-node or --other-build is needed: what the other side differs by; ${USAGE}`);
  const quick = argv.includes('--quick');
  const outDir = path.resolve(value('out') ?? path.join(REPO, 'bench', 'results', quick ? 'quick' : ''));
  const common = { otherNode: otherNode ? path.resolve(otherNode) : process.execPath, otherBuild: otherBuild ? path.resolve(otherBuild) : undefined, outDir };
  return quick
    ? { mode: 'quick', ...common, idleStarts: 1, idleSettleMs: 1000, lifecycleRounds: 3, lifecycleWarmup: 1, quietDeadlineMs: 0, streams: streamsPlan(true), containers: 10, startupRuns: 3, startupWarmup: 1 }
    : { mode: 'full', ...common, idleStarts: 5, idleSettleMs: 5000, lifecycleRounds: 20, lifecycleWarmup: 2, quietDeadlineMs: START_UP_WALK_DEADLINE_MS, streams: streamsPlan(false), containers: 200, startupRuns: 10, startupWarmup: 1 };
}

function log(message: string): void {
  process.stderr.write(`[node-compare ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** A side: the build as the start-up part execs it (with its Node first on PATH), and that Node. */
type NodeSide = StartupBuild & NodeSideInfo;

/**
 * A copy of the build whose main.js is `mainJs` (<root>/dist/src/main.js) in `dir`, laid out as
 * its package is (package.json, node_modules, proto and dist's other folders linked: the shim
 * finds its pause and port-relay programs from the package root), its code cache made by `node`
 * and checked to be taken by it (scripts/code-cache.mjs). Gives the copy's main.js.
 */
function buildForNode(mainJs: string, node: string, dir: string): string {
  const src = path.dirname(mainJs);
  const dist = path.dirname(src);
  const root = path.dirname(dist);
  if (path.basename(mainJs) !== 'main.js' || path.basename(src) !== 'src' || !fs.existsSync(path.join(root, 'package.json'))) {
    throw new Error(`${mainJs} is not a build's dist/src/main.js: the other Node runs a copy of one`);
  }
  for (const name of ['package.json', 'node_modules', 'proto']) fs.symlinkSync(path.join(root, name), path.join(dir, name));
  fs.mkdirSync(path.join(dir, 'dist'));
  for (const name of fs.readdirSync(dist)) if (name !== 'src') fs.symlinkSync(path.join(dist, name), path.join(dir, 'dist', name));
  const copy = path.join(dir, 'dist', 'src');
  fs.cpSync(src, copy, { recursive: true });
  const made = spawnSync(process.execPath, [CODE_CACHE_SCRIPT, `--node=${node}`, copy], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`the code cache for ${node}: ${made.stderr}`);
  log(made.stdout.trim());
  return path.join(copy, 'main.js');
}

/** The checkout's commit, short, with "+" when its work tree differs from it. */
function commitOf(root: string): string {
  const git = (...args: string[]): string => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8' }).trim();
  try {
    return `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') === '' ? '' : '+'}`;
  } catch {
    return path.basename(root);
  }
}

function nodeSides(plan: NodeComparePlan, copyDir: string): [NodeSide, NodeSide] {
  const otherVersion = execFileSync(plan.otherNode, ['--version'], { encoding: 'utf8' }).trim();
  const sameNode = fs.realpathSync(plan.otherNode) === fs.realpathSync(process.execPath);
  const otherMain = plan.otherBuild ? path.join(plan.otherBuild, 'dist', 'src', 'main.js') : MAIN_JS;
  if (!fs.existsSync(otherMain)) throw new Error(`--other-build: ${otherMain} does not exist (run npm run build there)`);
  const builds = plan.otherBuild ? [` build ${commitOf(REPO)}`, ` build ${commitOf(plan.otherBuild)}`] : ['', ''];
  const project: NodeSide = { label: `Node ${process.version}${builds[0]}`, node: process.execPath, version: process.version, mainJs: MAIN_JS, env: serviceEnvironmentOn(process.execPath) };
  const other: NodeSide = {
    label: `Node ${otherVersion}${otherVersion === process.version && !sameNode ? ` (${plan.otherNode})` : ''}${builds[1]}`,
    node: plan.otherNode,
    version: otherVersion,
    // The bench's Node takes the build's own code cache; another Node a copy with its own.
    mainJs: sameNode ? otherMain : buildForNode(otherMain, plan.otherNode, copyDir),
    env: serviceEnvironmentOn(plan.otherNode),
  };
  if (project.label === other.label) throw new Error(`both sides are ${project.label}: nothing to compare`);
  return [project, other];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The shims running now, for the clean-up to stop. */
const running = new Set<ShimProcess>();

/** Starts a fresh shim of `side` (on `rootDir` if given) and checks that it runs that side's Node. */
async function startSide(side: NodeSide, rootDir?: string): Promise<ShimProcess> {
  const shim = await startShim({ args: [`--log-level=${SHIM_LOG_LEVEL}`], mainJs: side.mainJs, env: side.env, ...(rootDir ? { rootDir } : {}) });
  running.add(shim);
  const exe = fs.readlinkSync(`/proc/${shim.child.pid}/exe`);
  if (exe !== fs.realpathSync(side.node)) throw new Error(`${side.label}: the shim runs ${exe}, not ${side.node}`);
  return shim;
}

async function stopSide(shim: ShimProcess): Promise<void> {
  running.delete(shim);
  await shim.stop();
}

/** Fresh shims, the sides taking turns (which goes first alternates), each read `settleMs` after its first answer. */
async function measureIdleRss(sides: readonly [NodeSide, NodeSide], plan: NodeComparePlan): Promise<[Array<Record<string, number>>, Array<Record<string, number>>]> {
  const starts: [Array<Record<string, number>>, Array<Record<string, number>>] = [[], []];
  for (let round = 0; round < plan.idleStarts; round++) {
    for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const shim = await startSide(sides[i]!);
      try {
        await sleep(plan.idleSettleMs);
        starts[i]!.push(memoryBreakdown(shim.child.pid!));
      } finally {
        await stopSide(shim);
      }
      log(`idle RSS ${round + 1}/${plan.idleStarts} ${sides[i]!.label}: ${(starts[i]!.at(-1)!.rss! / 2 ** 20).toFixed(1)} MiB`);
    }
  }
  return starts;
}

async function main(argv: readonly string[]): Promise<number> {
  const plan = nodeComparePlanFrom(argv);
  if (!fs.existsSync(plan.otherNode)) throw new Error(`--other-node: ${plan.otherNode} does not exist`);
  if (plan.otherBuild && !fs.existsSync(plan.otherBuild)) throw new Error(`--other-build: ${plan.otherBuild} does not exist`);
  const started = Date.now();
  const bench: BenchRun = { run: newTestRun(), logRoot: tempDir('bench-logs') };
  // The project side's state directory outlives its shim for the start-up part.
  const rootDir = tempDir('bench-root');
  const copyDir = tempDir('bench-node');
  return withCleanUp(bench, [rootDir, copyDir], () => [...running], log, async () => {
    await ensureTestImages();
    const sides = nodeSides(plan, copyDir);
    const [projectSide, otherSide] = sides;
    log(`idle RSS: ${plan.idleStarts} fresh shim(s) per side, each read ${plan.idleSettleMs / 1000} s after its first answer`);
    const [idleProject, idleOther] = await measureIdleRss(sides, plan);

    log('lifecycle and streams: a shim on each Node, side by side');
    const project = await startSide(projectSide, rootDir);
    const other = await startSide(otherSide);
    for (const shim of [project, other]) await waitForStartUpWalk(shim.child.pid!, plan.quietDeadlineMs, log);
    log(`lifecycle: ${plan.lifecycleRounds} rounds per side (+${plan.lifecycleWarmup} warm-up): ${projectSide.label}, raw, ${otherSide.label}`);
    const life = await runLifecycle(project.client, dockerApi(), bench, plan.lifecycleRounds, plan.lifecycleWarmup, undefined, other.client);
    const lifecycle = LIFECYCLE_CALLS.map((call) => ({ call, project: summarize(life[call].shim), other: summarize(life[call].otherShim), raw: summarize(life[call].raw) }));
    log(`streams: ${plan.streams.rounds} round(s) per side`);
    const streams = await measureStreams(project.client, bench, project.child.pid!, plan.streams, log, { client: other.client, pid: other.child.pid! });
    await stopSide(other);

    log(`startup: populating to ${plan.containers} containers through ${projectSide.label}'s shim`);
    const pods: PopulatedPod[] = [];
    await populate(project.client, bench, pods, plan.containers, 4);
    await stopSide(project);
    log(`startup: ${plan.startupRuns} execs per side (+${plan.startupWarmup} warm-up) on its state directory`);
    const samples = await measureStartup(sides, rootDir, { runs: plan.startupRuns, warmup: plan.startupWarmup, logLevel: SHIM_LOG_LEVEL, progress: log });
    const times = (s: readonly StartupSample[]): NodeCompareResult['startup']['project'] => ({ version: summarize(s.map((x) => x.versionMs)), listContainers: summarize(s.map((x) => x.listMs)) });

    const info = (s: NodeSide): NodeSideInfo => ({ label: s.label, node: s.node, version: s.version, mainJs: s.mainJs });
    const { docker, machine } = await environmentMeta();
    const result: NodeCompareResult = {
      meta: { date: new Date().toISOString(), mode: plan.mode, run: bench.run, docker, machine, shimLogLevel: SHIM_LOG_LEVEL, durationSeconds: Math.round((Date.now() - started) / 1000) },
      sides: { project: info(projectSide), other: info(otherSide) },
      idleRss: { settleMs: plan.idleSettleMs, project: idleProject, other: idleOther },
      lifecycle,
      streams: { project: streams.rows, other: streams.otherShim ?? [] },
      startup: { containers: pods.length * 2, runs: plan.startupRuns, project: times(samples.get(projectSide.label)!), other: times(samples.get(otherSide.label)!) },
    };
    fs.mkdirSync(plan.outDir, { recursive: true });
    const file = path.join(plan.outDir, `node-compare-${result.meta.date.replace(/[:.]/g, '-')}.json`);
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`${renderNodeCompareHeader(result)}\n\n${renderNodeCompareTable(result)}\n\nJSON: ${file}\n`);
    return 0;
  });
}

runAsProgram(module, 'node comparison', main);
