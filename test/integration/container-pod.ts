// Test helpers for container tests: a pod's pause container made behind the shim's back
// exactly as RunPodSandbox makes one (dockershim name, podsandbox type label, the pause
// image), the sandbox config kubelet would send with it, and container configs.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ContainerConfig, PodSandboxConfig } from '../../src/cri/types';
import { sandboxDockerName } from '../../src/shim/naming';
import type { CriClient } from '../support/client';
import { testLabels } from '../support/cleanup';
import { dockerApi, TEST_BUSYBOX_IMAGE, TEST_PAUSE_IMAGE } from '../support/images';
import { waitFor } from '../support/poll';
import { tempDir } from '../support/shim';

export interface TestPod {
  id: string;
  config: PodSandboxConfig;
  logDir: string;
}

export async function startTestPod(run: string, name: string): Promise<TestPod> {
  const logDir = tempDir('podlogs');
  const metadata = { name, namespace: 'cds-test', uid: `${run}-${name}`, attempt: 0 };
  const created = await dockerApi().createContainer({
    name: sandboxDockerName(metadata),
    Image: TEST_PAUSE_IMAGE,
    Hostname: name,
    Labels: { ...testLabels(run), 'io.kubernetes.docker.type': 'podsandbox' },
    HostConfig: { NetworkMode: 'none', IpcMode: 'shareable' },
  });
  await created.start();
  const config: PodSandboxConfig = { metadata, hostname: name, logDirectory: logDir, labels: testLabels(run), linux: {} };
  return { id: created.id, config, logDir };
}

export async function removeTestPod(pod: TestPod): Promise<void> {
  await dockerApi().getContainer(pod.id).remove({ force: true }).catch(() => undefined);
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
