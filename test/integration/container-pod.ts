// Test helpers for container tests: a pod made with RunPodSandbox, the sandbox config kubelet
// sends again with each CreateContainer, and container configs.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ContainerConfig, LinuxPodSandboxConfig, PodSandboxConfig } from '../../src/cri/types';
import type { CriClient } from '../support/client';
import { testLabels } from '../support/cleanup';
import { TEST_BUSYBOX_IMAGE } from '../support/images';
import { waitFor } from '../support/poll';
import { tempDir } from '../support/shim';

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
