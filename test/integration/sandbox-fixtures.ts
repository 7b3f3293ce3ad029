// Helpers shared by the sandbox integration tests: pod configs carrying the test labels, and
// a raw busybox container that joins a sandbox's namespaces to look at them from inside
// (the pause image has no shell, so there is nothing to exec into).
import type { PodSandboxConfig } from '../../src/cri/types';
import { testLabels } from '../support/cleanup';
import { dockerApi, TEST_BUSYBOX_IMAGE } from '../support/images';

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

/** Docker's multiplexed log format: 8-byte headers before each chunk. */
function demuxed(buf: Buffer): string {
  let out = '';
  let i = 0;
  while (i + 8 <= buf.length) {
    const size = buf.readUInt32BE(i + 4);
    out += buf.subarray(i + 8, i + 8 + size).toString('utf8');
    i += 8 + size;
  }
  return out;
}
