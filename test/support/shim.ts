// Starts the real cri-docker-shim binary (dist/src/main.js) on a temporary socket and state
// directory, as a kubelet would find it, and stops it again.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { criClient, type CriClient } from './client';
import { DockerProxy } from './docker-proxy';
import { freeLoopbackPort } from './net-probe';
import { waitFor } from './poll';
import { TEST_PAUSE_IMAGE } from './images';
import { tempDir } from './temp';

export { tempDir };

/**
 * The built command, run as users run it (its shebang carries the Node flags it needs); or, with
 * CDS_TEST_SHIM=dist/package/cri-docker-shim, the single executable (scripts/package.mjs).
 */
export const MAIN_JS = path.resolve(process.env.CDS_TEST_SHIM ?? path.resolve(__dirname, '../../src/main.js'));

export interface ShimProcess {
  readonly socket: string;
  readonly address: string;
  readonly rootDir: string;
  readonly client: CriClient;
  readonly child: ChildProcess;
  /** Where its Prometheus endpoint listens (the `metrics` option), on 127.0.0.1. */
  readonly metricsPort: number | undefined;
  /** Everything the shim wrote to stderr so far (its pino log). */
  output(): string;
  /** Sends the signal and resolves with the exit code; removes the socket and a temp state dir. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface ShimOptions {
  args?: string[];
  /** Reuse a state directory (to test restarts; the caller removes it); a fresh temp one otherwise. */
  rootDir?: string;
  env?: NodeJS.ProcessEnv;
  /**
   * Another copy of the built command to run (MAIN_JS otherwise): the bench runs one whose code
   * cache another Node made, with that Node first on `env`'s PATH for the shebang to find.
   */
  mainJs?: string;
  /** Node flags the shim is run with (e.g. --cpu-prof, which NODE_OPTIONS refuses); replaces the shebang's. */
  nodeFlags?: string[];
  /** Serve Prometheus metrics: --metrics-bind-addr on a free loopback port (`metricsPort`). */
  metrics?: boolean;
  /**
   * Run under this descriptor limit, soft and hard (prlimit): the shim sizes its Docker socket
   * budgets from it, and Node raises the soft limit to the hard one, so both are set.
   */
  openFiles?: number;
}


/** Runs the shim with args and waits for it to exit (for start-up failures and flag errors). */
export function runShimToExit(args: string[], env?: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(MAIN_JS, ['--network-plugin=', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`shim did not exit within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export async function startShim(opts: ShimOptions = {}): Promise<ShimProcess> {
  const work = tempDir('shim');
  // A caller may choose the endpoint (a fixed socket path, or tcp://host:port).
  const endpointArg = opts.args?.find((a) => a.startsWith('--container-runtime-endpoint='))?.split('=')[1];
  const socket = endpointArg?.startsWith('unix://') ? endpointArg.slice('unix://'.length) : path.join(work, 'cri.sock');
  const rootDir = opts.rootDir ?? path.join(work, 'root');
  const metricsPort = opts.metrics ? await freeLoopbackPort() : undefined;
  const args = [
    `--container-runtime-endpoint=unix://${socket}`,
    `--cri-dockerd-root-directory=${rootDir}`,
    `--pod-infra-container-image=${TEST_PAUSE_IMAGE}`,
    '--log-level=debug',
    '--log-format=json',
    // Docker's own bridge unless a test asks for a plugin (a later --network-plugin wins).
    '--network-plugin=',
    ...(metricsPort === undefined ? [] : [`--metrics-bind-addr=127.0.0.1:${metricsPort}`]),
    ...(opts.args ?? []),
  ];
  const mainJs = opts.mainJs ?? MAIN_JS;
  const [shimCommand, shimArgs] = opts.nodeFlags ? [process.execPath, [...opts.nodeFlags, mainJs, ...args]] : [mainJs, args];
  // prlimit execs the shim, so the child's PID is the shim's own.
  const [command, commandArgs] =
    opts.openFiles === undefined ? [shimCommand, shimArgs] : ['prlimit', [`--nofile=${opts.openFiles}:${opts.openFiles}`, '--', shimCommand, ...shimArgs]];
  const child = spawn(command, commandArgs, {
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let running = true;
  void exited.then(() => (running = false));

  const address = endpointArg?.startsWith('tcp://') ? endpointArg.slice('tcp://'.length) : `unix://${socket}`;
  const client = criClient(address);
  try {
    // A shim that exits ends the wait at once (a probe that throws would be polled to the deadline).
    const started = await waitFor(
      'the shim to answer Version',
      async () => {
        if (!running) return 'exited';
        return (await client.runtime.Version({})).runtimeName === 'docker' && 'answered';
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    if (started === 'exited') throw new Error(`shim exited during start-up: ${output}`);
  } catch (err) {
    child.kill('SIGKILL');
    client.close();
    await exited;
    fs.rmSync(work, { recursive: true, force: true });
    throw new Error(`${(err as Error).message}\n--- shim output ---\n${output}`);
  }

  return {
    socket,
    address,
    rootDir,
    client,
    child,
    metricsPort,
    output: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      client.close();
      if (running) child.kill(signal);
      const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(killer);
      fs.rmSync(work, { recursive: true, force: true });
      return code;
    },
  };
}

export interface ProxiedShim {
  readonly shim: ShimProcess;
  /** Between the shim and Docker: slow it down (delayMs) or cut it off (down/up). */
  readonly proxy: DockerProxy;
  /** Stops the shim (resolving with its exit code), then the proxy; safe to call again. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A shim that reaches Docker through a DockerProxy the test controls. */
export async function startShimBehindProxy(args: string[] = []): Promise<ProxiedShim> {
  const dir = tempDir('proxy');
  const proxy = new DockerProxy(path.join(dir, 'docker.sock'));
  const cleanUp = async (): Promise<void> => {
    await proxy.down();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  await proxy.up();
  let shim: ShimProcess;
  try {
    shim = await startShim({ args: [`--docker-endpoint=unix://${proxy.socketPath}`, ...args] });
  } catch (err) {
    await cleanUp();
    throw err;
  }
  return {
    shim,
    proxy,
    async stop(signal?: NodeJS.Signals) {
      const code = await shim.stop(signal);
      await cleanUp();
      return code;
    },
  };
}

/** The shim's last log lines about its storage figures: what a test that waits for them says when it times out. */
export function storageLog(shim: Pick<ShimProcess, 'output'>, lines = 12): string {
  return shim
    .output()
    .split('\n')
    .filter((l) => l.includes('storage figures'))
    .slice(-lines)
    .join('\n');
}
