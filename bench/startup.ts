// Part 5: start-up. After a crash kubelet keeps calling, so what counts is the time from the
// exec of dist/src/main.js to its first successful answer. With the node populated (the read
// part's pods, and the state directory the benchmark's shim left behind: checkpoints and log
// positions, as a restarted shim finds them), the shim is exec'd again and again; each run
// times exec → first Version answered and exec → first ListContainers answered, both asked
// from the moment the socket appears, with the environment a service has. The same build with
// the bench's own environment, and another build (`--baseline=`), can run the same way, taking
// turns with it, for a comparison.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { criClient, type CriClient } from '../test/support/client';
import { removePaths } from '../test/support/cleanup';
import { TEST_PAUSE_IMAGE } from '../test/support/images';
import { tempDir } from '../test/support/shim';

export interface StartupBuild {
  /** How the report names it ("this build", "before: <commit>"). */
  label: string;
  /** The main.js to exec (it carries its Node flags in its shebang). */
  mainJs: string;
  /** The environment it is exec'd with (see serviceEnvironment). */
  env: NodeJS.ProcessEnv;
}

/**
 * The environment a shim gets as a service: PATH (and DOCKER_HOST, so that it finds the Docker
 * the bench populated), as the systemd unit and the image give it. Not the bench's own: a shell
 * can carry variables that Node acts on while it boots, before any of the shim's code runs.
 * NODE_EXTRA_CA_CERTS, which this workplace sets for npm, makes Node build its whole CA store at
 * every start (~60 ms here); no node's service sets it.
 */
export function serviceEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' };
  if (process.env.DOCKER_HOST) env.DOCKER_HOST = process.env.DOCKER_HOST;
  return env;
}

/**
 * A service's environment with `node`'s folder first on PATH, so that main.js's shebang
 * (`/usr/bin/env -S ... node`) runs that Node: a node where it is the one installed.
 */
export function serviceEnvironmentOn(node: string): NodeJS.ProcessEnv {
  const env = serviceEnvironment();
  return { ...env, PATH: [path.dirname(node), env.PATH].join(path.delimiter) };
}

/** Variables Node acts on while it boots, before the shim's code runs (Node's CLI docs). */
const NODE_BOOT_VARIABLES = ['NODE_OPTIONS', 'NODE_EXTRA_CA_CERTS', 'NODE_ICU_DATA', 'NODE_V8_COVERAGE', 'NODE_COMPILE_CACHE', 'OPENSSL_CONF', 'UV_THREADPOOL_SIZE'];

/** Which of those the bench's own environment sets. */
export function nodeBootVariables(env: NodeJS.ProcessEnv = process.env): string[] {
  return NODE_BOOT_VARIABLES.filter((k) => env[k] !== undefined && env[k] !== '');
}

/** One exec: milliseconds from spawn to each first successful answer. */
export interface StartupSample {
  versionMs: number;
  listMs: number;
}

/** A run that has not answered by then has failed, whatever the target. */
const RUN_DEADLINE_MS = 30_000;
/** A fresh subchannel per attempt: a refused connection's backoff must not delay the next. */
const ATTEMPT_CHANNEL: grpc.ChannelOptions = { 'grpc.use_local_subchannel_pool': 1 };

/** Resolves once `dir/name` exists, told by inotify rather than by polling the directory. */
function appearance(dir: string, name: string): { appeared: Promise<void>; close(): void } {
  let watcher: fs.FSWatcher | undefined;
  const appeared = new Promise<void>((resolve) => {
    const check = (): void => {
      if (fs.existsSync(path.join(dir, name))) resolve();
    };
    watcher = fs.watch(dir, check);
    check();
  });
  return { appeared, close: () => watcher?.close() };
}

/**
 * Asks `call` until it succeeds, each time on a new connection, and gives the time since
 * `started`. Gives up when the process is gone or the deadline passes.
 */
async function firstAnswer(address: string, started: number, call: (c: CriClient) => Promise<unknown>, alive: () => string | undefined): Promise<number> {
  for (;;) {
    const client = criClient(address, ATTEMPT_CHANNEL);
    try {
      await call(client);
      return performance.now() - started;
    } catch (err) {
      const gone = alive();
      if (gone !== undefined) throw new Error(`the shim exited before answering: ${gone}`);
      if (performance.now() - started > RUN_DEADLINE_MS) throw new Error(`no answer within ${RUN_DEADLINE_MS} ms: ${(err as Error).message}`);
    } finally {
      client.close();
    }
    // The socket exists but is not answering yet; try again at once, without spinning.
    await new Promise((r) => setTimeout(r, 1));
  }
}

/**
 * The builds the start-up part execs: this one (`mainJs`) in a service's environment; the same
 * again with the bench's own environment when that sets a variable Node acts on at boot; and
 * another build's main.js (`baseline`), in a service's environment, when one is given.
 */
export function startupBuilds(mainJs: string, baseline: string | undefined): { self: StartupBuild; inShell?: StartupBuild; before?: StartupBuild; all: StartupBuild[] } {
  const self: StartupBuild = { label: "this build, a service's environment", mainJs, env: serviceEnvironment() };
  const bootVariables = nodeBootVariables();
  const inShell: StartupBuild | undefined =
    bootVariables.length === 0 ? undefined : { label: `this build, with the bench's ${bootVariables.join(', ')}`, mainJs, env: process.env };
  const before: StartupBuild | undefined = baseline === undefined ? undefined : { label: `before: ${baseline}`, mainJs: baseline, env: serviceEnvironment() };
  return { self, inShell, before, all: [self, inShell, before].filter((b): b is StartupBuild => b !== undefined) };
}

/** Execs one shim on `rootDir`, times its first answers, and stops it. */
export async function execToFirstAnswers(build: StartupBuild, rootDir: string, logLevel: string): Promise<StartupSample> {
  const dir = tempDir('bench-startup');
  const socket = path.join(dir, 'cri.sock');
  const address = `unix://${socket}`;
  const watch = appearance(dir, 'cri.sock');
  const args = [
    `--container-runtime-endpoint=${address}`,
    `--cri-dockerd-root-directory=${rootDir}`,
    `--pod-infra-container-image=${TEST_PAUSE_IMAGE}`,
    `--log-level=${logLevel}`,
    '--log-format=json',
  ];
  const started = performance.now();
  const child = spawn(build.mainJs, args, { stdio: ['ignore', 'ignore', 'pipe'], env: build.env });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.on('exit', (code) => {
      exitCode = code;
      resolve();
    }),
  );
  const gone = (): string | undefined => (exitCode === undefined ? undefined : `exit ${exitCode}; stderr: ${stderr}`);
  const exitedEarly = exited.then(() => Promise.reject(new Error(`${build.label}: the shim exited during start-up: ${gone()}`)));
  // It exits on purpose at the end of every run: that must not count as an unhandled failure.
  exitedEarly.catch(() => undefined);
  let deadline: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      watch.appeared,
      exitedEarly,
      new Promise((_, reject) => (deadline = setTimeout(() => reject(new Error(`${build.label}: no socket within ${RUN_DEADLINE_MS} ms`)), RUN_DEADLINE_MS))),
    ]);
    const [versionMs, listMs] = await Promise.all([
      firstAnswer(address, started, (c) => c.runtime.Version({}), gone),
      firstAnswer(address, started, (c) => c.runtime.ListContainers({}), gone),
    ]);
    return { versionMs, listMs };
  } finally {
    clearTimeout(deadline);
    watch.close();
    if (exitCode === undefined) child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(killer);
    removePaths(dir);
  }
}

/**
 * `warmup` + `runs` execs of each build, one at a time on the same state directory. The builds
 * take turns and swap the order every round, so a busy moment on the shared machine falls on
 * both alike. Returns the counted samples per build label.
 */
export async function measureStartup(
  builds: readonly StartupBuild[],
  rootDir: string,
  opts: { runs: number; warmup: number; logLevel: string; progress?: (message: string) => void },
): Promise<Map<string, StartupSample[]>> {
  const samples = new Map<string, StartupSample[]>(builds.map((b) => [b.label, []]));
  for (let round = -opts.warmup; round < opts.runs; round++) {
    const order = round % 2 === 0 ? builds : [...builds].reverse();
    for (const build of order) {
      const sample = await execToFirstAnswers(build, rootDir, opts.logLevel);
      if (round >= 0) samples.get(build.label)!.push(sample);
      opts.progress?.(
        `startup ${round < 0 ? 'warm-up' : `run ${round + 1}/${opts.runs}`} ${build.label}: Version ${sample.versionMs.toFixed(0)} ms, ListContainers ${sample.listMs.toFixed(0)} ms`,
      );
    }
  }
  return samples;
}
