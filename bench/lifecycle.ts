// Part 1: the lifecycle of one pod with one container, through the shim and through the raw
// Docker API, round after round (the two sides alternate, so a noisy moment on this shared
// machine lands on both).
import type Dockerode from 'dockerode';
import type { CriClient } from '../test/support/client';
import type { GrpcFloor } from './grpc-floor';
import { untilQuiet } from './procfs';
import {
  type BenchRun,
  containerConfig,
  EXEC_COMMAND,
  LIFECYCLE_COMMAND,
  podConfig,
  rawContainerSpec,
  rawExec,
  rawPauseSpec,
  STOP_TIMEOUT_SECONDS,
  timed,
} from './workload';

/** A pod's start, RunPodSandbox → CreateContainer → StartContainer, timed as one sequence. */
export const POD_START = 'PodStart';

/**
 * The rows measured: each CRI call in the order a pod's life makes them, then a pod's start
 * (the first three calls, timed from before the first to after the last, on each side).
 */
export const LIFECYCLE_CALLS = [
  'RunPodSandbox',
  'CreateContainer',
  'StartContainer',
  'ExecSync',
  'StopContainer',
  'RemoveContainer',
  'StopPodSandbox',
  'RemovePodSandbox',
  POD_START,
] as const;
export type LifecycleCall = (typeof LIFECYCLE_CALLS)[number];

/** The rows the grpc-js floor times (floorRound): all but ExecSync, whose exec is not one unary request. */
export const FLOOR_CALLS = LIFECYCLE_CALLS.filter((c) => c !== 'ExecSync');

/** The Docker calls that do each CRI call's work on the raw side. */
export const RAW_LIFECYCLE_CALLS: Record<LifecycleCall, string> = {
  RunPodSandbox: 'create + start pause',
  CreateContainer: 'create busybox (container:<pause> net+ipc)',
  StartContainer: 'start',
  ExecSync: 'exec create + start + inspect',
  StopContainer: `stop t=${STOP_TIMEOUT_SECONDS}`,
  RemoveContainer: 'remove force',
  StopPodSandbox: `stop pause t=${STOP_TIMEOUT_SECONDS}`,
  RemovePodSandbox: 'remove pause force',
  [POD_START]: 'the raw RunPodSandbox, CreateContainer and StartContainer in a row',
};

/**
 * Each call's milliseconds per side; `floor` stays empty without a floor (and for ExecSync),
 * `otherShim` without a second shim.
 */
export type LifecycleSamples = Record<LifecycleCall, { shim: number[]; raw: number[]; floor: number[]; otherShim: number[] }>;

function emptySamples(): LifecycleSamples {
  const s = {} as LifecycleSamples;
  for (const call of LIFECYCLE_CALLS) s[call] = { shim: [], raw: [], floor: [], otherShim: [] };
  return s;
}

/** Told each row's milliseconds as its call (or the pod's start) ends; the round waits for it. */
export type RecordCall = (call: LifecycleCall, ms: number) => void | Promise<void>;

/** Times each call, and the pod's start from the first call's start to the third's end. */
function stepper(record: RecordCall): <T>(call: LifecycleCall, fn: () => Promise<T>) => Promise<T> {
  let podStart = 0n;
  return async (call, fn) => {
    if (call === 'RunPodSandbox') podStart = process.hrtime.bigint();
    const { ms, value } = await timed(fn);
    const podStartMs = Number(process.hrtime.bigint() - podStart) / 1e6;
    await record(call, ms);
    if (call === 'StartContainer') await record(POD_START, podStartMs);
    return value;
  };
}

/** How long the lifecycle part waits at most for a fresh shim's start-up walk to end. */
export const START_UP_WALK_DEADLINE_MS = 180_000;

/**
 * Waits, at most `deadlineMs` (0: not at all), for a fresh shim to be quiet (untilQuiet): the
 * lifecycle calls are measured as kubelet meets them in steady state, not while the shim's
 * one-off walk of Docker's image store holds its main thread in between.
 */
export async function waitForStartUpWalk(pid: number, deadlineMs: number, log: (message: string) => void): Promise<void> {
  if (deadlineMs === 0) return;
  const { waitedMs, quiet } = await untilQuiet(pid, deadlineMs);
  const seconds = Math.round(waitedMs / 1000);
  log(quiet ? `the shim was quiet after ${seconds} s` : `the shim was still busy after ${seconds} s; measuring anyway`);
}

export async function shimRound(client: CriClient, bench: BenchRun, name: string, record: RecordCall): Promise<void> {
  const step = stepper(record);
  const config = podConfig(bench, name);
  const { podSandboxId } = await step('RunPodSandbox', () => client.runtime.RunPodSandbox({ config }));
  const { containerId } = await step('CreateContainer', () =>
    client.runtime.CreateContainer({ podSandboxId, config: containerConfig(bench, 'main', LIFECYCLE_COMMAND), sandboxConfig: config }),
  );
  await step('StartContainer', () => client.runtime.StartContainer({ containerId }));
  const exec = await step('ExecSync', () => client.runtime.ExecSync({ containerId, cmd: EXEC_COMMAND, timeout: 10 }));
  if (exec.exitCode !== 0) throw new Error(`ExecSync ${EXEC_COMMAND.join(' ')} exited ${exec.exitCode}: ${exec.stderr.toString()}`);
  await step('StopContainer', () => client.runtime.StopContainer({ containerId, timeout: STOP_TIMEOUT_SECONDS }));
  await step('RemoveContainer', () => client.runtime.RemoveContainer({ containerId }));
  await step('StopPodSandbox', () => client.runtime.StopPodSandbox({ podSandboxId }));
  await step('RemovePodSandbox', () => client.runtime.RemovePodSandbox({ podSandboxId }));
}

export async function rawRound(docker: Dockerode, bench: BenchRun, name: string, record: RecordCall): Promise<void> {
  const step = stepper(record);
  const pause = await step('RunPodSandbox', async () => {
    const c = await docker.createContainer(rawPauseSpec(bench, name));
    await c.start();
    return c;
  });
  const app = await step('CreateContainer', () => docker.createContainer(rawContainerSpec(bench, name, pause.id, LIFECYCLE_COMMAND)));
  await step('StartContainer', () => app.start());
  await step('ExecSync', () => rawExec(docker, app.id, EXEC_COMMAND));
  await step('StopContainer', () => app.stop({ t: STOP_TIMEOUT_SECONDS }));
  await step('RemoveContainer', () => app.remove({ force: true, v: true }));
  await step('StopPodSandbox', () => pause.stop({ t: STOP_TIMEOUT_SECONDS }));
  await step('RemovePodSandbox', () => pause.remove({ force: true, v: true }));
}

/**
 * The raw round's requests, each relayed by the bare grpc-js server of grpc-floor.ts. ExecSync
 * is not one unary request (its output comes on a hijacked stream): the exec runs on the raw
 * side, unrecorded.
 */
export async function floorRound(floor: GrpcFloor, docker: Dockerode, bench: BenchRun, name: string, record: RecordCall): Promise<void> {
  const step = stepper(record);
  const create = async ({ name: containerName, ...body }: Dockerode.ContainerCreateOptions): Promise<string> => {
    const answer = await floor.docker({ method: 'POST', path: `/containers/create?name=${encodeURIComponent(containerName ?? '')}`, body });
    return (JSON.parse(answer.body) as { Id: string }).Id;
  };
  const pause = await step('RunPodSandbox', async () => {
    const id = await create(rawPauseSpec(bench, `floor-${name}`));
    await floor.docker({ method: 'POST', path: `/containers/${id}/start` });
    return id;
  });
  const app = await step('CreateContainer', () => create(rawContainerSpec(bench, `floor-${name}`, pause, LIFECYCLE_COMMAND)));
  await step('StartContainer', () => floor.docker({ method: 'POST', path: `/containers/${app}/start` }));
  await rawExec(docker, app, EXEC_COMMAND);
  await step('StopContainer', () => floor.docker({ method: 'POST', path: `/containers/${app}/stop?t=${STOP_TIMEOUT_SECONDS}` }));
  await step('RemoveContainer', () => floor.docker({ method: 'DELETE', path: `/containers/${app}?force=true&v=true` }));
  await step('StopPodSandbox', () => floor.docker({ method: 'POST', path: `/containers/${pause}/stop?t=${STOP_TIMEOUT_SECONDS}` }));
  await step('RemovePodSandbox', () => floor.docker({ method: 'DELETE', path: `/containers/${pause}?force=true&v=true` }));
}

/**
 * `rounds` measured rounds per side after `warmup` unmeasured ones, the sides taking turns at
 * going first (shim, raw and, given `floor`, the grpc-js floor; given `otherShim`, a second
 * shim: the same build on another Node, bench/node-compare.ts), so none always gets the warmer
 * daemon.
 */
export async function runLifecycle(client: CriClient, docker: Dockerode, bench: BenchRun, rounds: number, warmup: number, floor?: GrpcFloor, otherShim?: CriClient): Promise<LifecycleSamples> {
  const samples = emptySamples();
  const ignore = (): void => undefined;
  for (let i = 0; i < warmup + rounds; i++) {
    const measured = i >= warmup;
    const name = `life${i}`;
    const sides: Array<() => Promise<void>> = [
      () => shimRound(client, bench, name, measured ? (c, ms) => void samples[c].shim.push(ms) : ignore),
      () => rawRound(docker, bench, name, measured ? (c, ms) => void samples[c].raw.push(ms) : ignore),
      ...(floor ? [() => floorRound(floor, docker, bench, name, measured ? (c, ms) => void samples[c].floor.push(ms) : ignore)] : []),
      ...(otherShim ? [() => shimRound(otherShim, bench, `other-${name}`, measured ? (c, ms) => void samples[c].otherShim.push(ms) : ignore)] : []),
    ];
    for (let k = 0; k < sides.length; k++) await sides[(i + k) % sides.length]!();
  }
  return samples;
}
