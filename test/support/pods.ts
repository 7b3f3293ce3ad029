// Pods and containers for the integration tests: pod configs carrying the test labels; a pod
// made with RunPodSandbox together with the sandbox config kubelet sends again with each
// CreateContainer; container configs and the calls that run them; and raw busybox containers
// that join a sandbox's namespaces to look at them from inside (the pause image has no
// shell, so there is nothing to exec into).
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ContainerConfig, LinuxPodSandboxConfig, PodSandboxConfig } from '../../src/cri/types';
import { FrameSplitter } from '../../src/docker/stream-frames';
import type { CriClient } from './client';
import { testLabels } from './cleanup';
import { dockerApi, TEST_BUSYBOX_IMAGE } from './images';
import { waitFor } from './poll';
import { tempDir } from './temp';

export interface TestPod {
  id: string;
  config: PodSandboxConfig;
  logDir: string;
}

export async function startTestPod(client: CriClient, run: string, name: string, linux: LinuxPodSandboxConfig = {}): Promise<TestPod> {
  const logDir = tempDir('podlogs');
  const metadata = { name, namespace: 'cds-test', uid: `${run}-${name}`, attempt: 0 };
  const config: PodSandboxConfig = { metadata, hostname: name, logDirectory: logDir, labels: testLabels(run), linux };
  const { podSandboxId } = await client.runtime.RunPodSandbox({ config });
  return { id: podSandboxId, config, logDir };
}

/** Removes the pod (and with it its containers) and its log directory. */
export async function removeTestPod(client: CriClient, pod: TestPod): Promise<void> {
  await client.runtime.RemovePodSandbox({ podSandboxId: pod.id });
  fs.rmSync(pod.logDir, { recursive: true, force: true });
}

export function busybox(run: string, name: string, over: Partial<ContainerConfig> = {}): ContainerConfig {
  return {
    metadata: { name, attempt: 0 },
    image: { image: TEST_BUSYBOX_IMAGE },
    logPath: `${name}/0.log`,
    labels: testLabels(run),
    ...over,
  };
}

/** Creates and starts a container; returns its ID. */
export async function runContainer(client: CriClient, pod: TestPod, config: ContainerConfig): Promise<string> {
  const { containerId } = await client.runtime.CreateContainer({ podSandboxId: pod.id, config, sandboxConfig: pod.config });
  await client.runtime.StartContainer({ containerId });
  return containerId;
}

export async function waitExited(client: CriClient, id: string, timeoutMs = 30_000) {
  return waitFor(
    `container ${id} to exit`,
    async () => {
      const { status } = await client.runtime.ContainerStatus({ containerId: id });
      return status?.state === 'CONTAINER_EXITED' ? status : undefined;
    },
    { timeoutMs },
  );
}

/** Runs a command in a running container through ExecSync; fails on a non-zero exit. */
export async function sh(client: CriClient, id: string, script: string): Promise<string> {
  const res = await client.runtime.ExecSync({ containerId: id, cmd: ['sh', '-c', script], timeout: 20 });
  if (res.exitCode !== 0) throw new Error(`${script}: exit ${res.exitCode}: ${res.stderr.toString()}`);
  return res.stdout.toString();
}

export function logFile(pod: TestPod, name: string): string {
  return path.join(pod.logDir, name, '0.log');
}

/** The container stays up for tests that look inside it. */
export const SLEEP_FOREVER = { command: ['sleep', '3600'] };

let counter = 0;

/** A unique pod config for this test run; `extra` is merged over the defaults. */
export function podConfig(run: string, extra: Partial<PodSandboxConfig> = {}): PodSandboxConfig {
  counter += 1;
  const name = `pod${counter}-${run}`;
  return {
    metadata: { name, namespace: 'sandbox-test', uid: `uid-${run}-${counter}`, attempt: 0 },
    ...extra,
    labels: { ...testLabels(run), app: name, ...(extra.labels ?? {}) },
  };
}

export interface JoinOptions {
  network?: boolean;
  pid?: boolean;
  ipc?: boolean;
  /** Docker NetworkMode/PidMode/IpcMode "host" instead of joining the sandbox. */
  host?: boolean;
}

/**
 * Runs `script` with busybox sh in a raw container joined to the sandbox's namespaces (or the
 * host's), waits for it to exit, removes it, and returns its output.
 */
export async function runBeside(run: string, sandboxId: string | undefined, script: string, join: JoinOptions = { network: true }): Promise<string> {
  const docker = dockerApi();
  const mode = (wanted: boolean | undefined): string | undefined =>
    wanted ? (join.host ? 'host' : `container:${sandboxId}`) : undefined;
  const container = await docker.createContainer({
    Image: TEST_BUSYBOX_IMAGE,
    Cmd: ['sh', '-c', script],
    Labels: testLabels(run),
    HostConfig: { NetworkMode: mode(join.network), PidMode: mode(join.pid), IpcMode: mode(join.ipc) },
  });
  try {
    await container.start();
    const result = (await container.wait()) as { StatusCode: number };
    const logs = (await container.logs({ stdout: true, stderr: true })) as Buffer;
    const text = demuxed(logs);
    if (result.StatusCode !== 0) throw new Error(`helper exited ${result.StatusCode}: ${text}`);
    return text;
  } finally {
    await container.remove({ force: true });
  }
}

/** Starts a long-running raw container joined to the sandbox's network; the caller removes it. */
export async function startBeside(run: string, sandboxId: string, script: string, labels: Record<string, string> = {}): Promise<string> {
  const docker = dockerApi();
  const container = await docker.createContainer({
    Image: TEST_BUSYBOX_IMAGE,
    Cmd: ['sh', '-c', script],
    Labels: { ...testLabels(run), ...labels },
    HostConfig: { NetworkMode: `container:${sandboxId}` },
  });
  await container.start();
  return container.id;
}

/**
 * A container of `pod` made straight through Docker, named and labelled as CreateContainer
 * would (a change behind the shim's back), joined to the pod's network; not started.
 */
export async function createBehindTheBack(run: string, pod: TestPod, name: string): Promise<string> {
  const created = await dockerApi().createContainer({
    name: `k8s_${name}_${pod.config.metadata!.name}_cds-test_${pod.config.metadata!.uid}_0`,
    Image: TEST_BUSYBOX_IMAGE,
    Cmd: ['sleep', '3600'],
    Labels: { ...testLabels(run), 'io.kubernetes.docker.type': 'container', 'io.kubernetes.sandbox.id': pod.id },
    HostConfig: { NetworkMode: `container:${pod.id}` },
  });
  return created.id;
}

/** Docker's multiplexed log format, stdout and stderr together. */
function demuxed(buf: Buffer): string {
  const pieces: Buffer[] = [];
  new FrameSplitter().push(buf, (_stream, data) => pieces.push(data));
  return Buffer.concat(pieces).toString('utf8');
}

/**
 * Removes the cgroup Docker made for a pod's cgroup parent in each controller (cgroup v1);
 * call it once the pod's containers are gone, when it is empty.
 */
export function removePodCgroups(cgroupParent: string): void {
  const root = '/sys/fs/cgroup';
  if (!fs.existsSync(root)) return;
  for (const controller of fs.readdirSync(root)) {
    try {
      fs.rmdirSync(path.join(root, controller, cgroupParent));
    } catch {
      // Not made in this controller (or a co-mounted alias already removed it).
    }
  }
}
