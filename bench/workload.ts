// The pods and containers the benchmark makes, in both forms: the CRI configs sent to the
// shim, and the Docker create requests the raw side sends for the same work. Everything
// carries the run's test labels so cleanup removes exactly what this run made.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type Dockerode from 'dockerode';
import type { ContainerConfig, PodSandboxConfig } from '../src/cri/types';
import type { CriClient } from '../test/support/client';
import { removePaths, removeTestContainers, testLabels } from '../test/support/cleanup';
import { TEST_BUSYBOX_IMAGE, TEST_PAUSE_IMAGE } from '../test/support/images';
import type { ShimProcess } from '../test/support/shim';

export const BENCH_NAMESPACE = 'cds-bench';
/** Seconds a stop waits for SIGTERM before SIGKILL, on both sides. */
export const STOP_TIMEOUT_SECONDS = 10;
/** Ends at once on SIGTERM, so a stop measures a graceful stop, not the kill timeout. */
export const LIFECYCLE_COMMAND = ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"];
/** The long-running containers that populate the node for the read benchmarks. */
export const POPULATION_COMMAND = ['sleep', '3600'];
/** What ExecSync runs: the cheapest command there is, so the call's own cost shows. */
export const EXEC_COMMAND = ['true'];
/** Docker's label key that marks a raw container as the bench's (never the shim's type label). */
const RAW_ROLE_LABEL = 'cds-bench/raw-role';

export interface BenchRun {
  /** The value of the test run label on everything this run makes. */
  run: string;
  /** Pod log directories live under here; removed at the end. */
  logRoot: string;
}

export interface ShimPod {
  id: string;
  config: PodSandboxConfig;
}

export function podConfig(bench: BenchRun, name: string): PodSandboxConfig {
  const logDirectory = path.join(bench.logRoot, name);
  fs.mkdirSync(logDirectory, { recursive: true });
  return {
    metadata: { name, namespace: BENCH_NAMESPACE, uid: `${bench.run}-${name}`, attempt: 0 },
    hostname: name,
    logDirectory,
    labels: { ...testLabels(bench.run), app: name },
  };
}

export function containerConfig(bench: BenchRun, name: string, command: string[]): ContainerConfig {
  return {
    metadata: { name, attempt: 0 },
    image: { image: TEST_BUSYBOX_IMAGE },
    command,
    logPath: `${name}/0.log`,
    labels: testLabels(bench.run),
  };
}

/** RunPodSandbox + CreateContainer + StartContainer: one pod with one running container. */
export async function startShimPod(client: CriClient, bench: BenchRun, name: string, command: string[]): Promise<{ pod: ShimPod; containerId: string }> {
  const config = podConfig(bench, name);
  const { podSandboxId } = await client.runtime.RunPodSandbox({ config });
  const { containerId } = await client.runtime.CreateContainer({
    podSandboxId,
    config: containerConfig(bench, 'main', command),
    sandboxConfig: config,
  });
  await client.runtime.StartContainer({ containerId });
  return { pod: { id: podSandboxId, config }, containerId };
}

/**
 * The pause container as the shim creates it for a plain pod: shareable IPC, a 64 MiB
 * /dev/shm, the pause container's OOM score, the pod's hostname.
 */
export function rawPauseSpec(bench: BenchRun, name: string): Dockerode.ContainerCreateOptions {
  return {
    name: `cds-bench-raw_POD_${name}_${bench.run}`,
    Image: TEST_PAUSE_IMAGE,
    Hostname: name,
    Labels: { ...testLabels(bench.run), [RAW_ROLE_LABEL]: 'pause', app: name },
    HostConfig: { IpcMode: 'shareable', ShmSize: 64 * 1024 * 1024, OomScoreAdj: -998 },
  };
}

/** The app container joined to the pause container's network and IPC, as the shim makes it. */
export function rawContainerSpec(bench: BenchRun, name: string, pauseId: string, command: string[]): Dockerode.ContainerCreateOptions {
  return {
    name: `cds-bench-raw_main_${name}_${bench.run}`,
    Image: TEST_BUSYBOX_IMAGE,
    Cmd: command,
    Labels: { ...testLabels(bench.run), [RAW_ROLE_LABEL]: 'container' },
    HostConfig: { NetworkMode: `container:${pauseId}`, IpcMode: `container:${pauseId}` },
  };
}

/** Runs an exec to its end through the raw API, as ExecSync must: create, start attached, inspect. */
export async function rawExec(docker: Dockerode, containerId: string, cmd: string[]): Promise<number> {
  const exec = await docker.getContainer(containerId).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve).on('close', resolve).on('error', reject);
    stream.resume();
  });
  const code = await execExitCode(exec, `raw exec ${cmd.join(' ')}`);
  if (code !== 0) throw new Error(`raw exec ${cmd.join(' ')} exited ${code}`);
  return code;
}

/**
 * The exit code of an exec whose output has ended: Docker may record it a moment after the
 * output ends, so this inspects until the exec is no longer running (at most 5 s), as the shim
 * waits.
 */
export async function execExitCode(exec: Dockerode.Exec, what: string): Promise<number> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const info = await exec.inspect();
    if (!info.Running && info.ExitCode !== null) return info.ExitCode;
    if (Date.now() > deadline) throw new Error(`${what}: Docker did not report an exit code`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Runs both sides of round `round`, the shim's first in even rounds and the raw call's first in
 * odd ones, so neither always gets the warmer daemon.
 */
export async function inTurn(round: number, shim: () => Promise<void>, raw: () => Promise<void>): Promise<void> {
  const [first, second] = round % 2 === 0 ? [shim, raw] : [raw, shim];
  await first();
  await second();
}

/** Milliseconds `fn` took, with its result. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
}

/**
 * Runs `body`, then removes what the run made: the shim (or shims) `shim()` gives at that
 * moment, every container with the run's label, the pod logs and `dirs`. An interrupted run
 * (SIGINT, SIGTERM) removes them too, and exits 130.
 */
export async function withCleanUp<T>(
  bench: BenchRun,
  dirs: readonly string[],
  shim: () => ShimProcess | readonly ShimProcess[] | undefined,
  log: (message: string) => void,
  body: () => Promise<T>,
): Promise<T> {
  let cleanedUp = false;
  const cleanUp = async (): Promise<void> => {
    if (cleanedUp) return;
    cleanedUp = true;
    log('cleaning up');
    for (const running of [shim() ?? []].flat()) await running.stop().catch((err: Error) => log(`stopping the shim: ${err.message}`));
    try {
      log(`removed ${await removeTestContainers({ run: bench.run })} container(s)`);
    } finally {
      removePaths(bench.logRoot, ...dirs);
    }
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    log(`${signal}: stopping`);
    void cleanUp().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  try {
    return await body();
  } finally {
    await cleanUp();
    process.removeListener('SIGINT', onSignal).removeListener('SIGTERM', onSignal);
  }
}
