// CRI v1.37 against the real shim and Docker, from a client of each proto version: one built
// from the proto served (v1.37: env values as bytes, SIGNAL_ names, mount_options, CheckpointPod
// and RestorePod) and one from k8s.io/cri-api v0.36.1 (test/fixtures/cri-api-v0.36.1.proto), as a
// v1.36 kubelet or critest speaks it, which must find nothing changed.
import assert from 'node:assert/strict';
import { status as Code } from '@grpc/grpc-js';
import { describe, it } from 'node:test';
import { rejectsWith } from '../support/client';
import { criV136Client } from '../support/client-v136';
import { useShim } from '../support/fixture';
import { TEST_BUSYBOX_IMAGE } from '../support/images';
import { busybox, runContainer, SLEEP_FOREVER } from '../support/pods';

const PRINT_GREETING = ['sh', '-c', 'printf %s "$GREETING"'];
// The node's network: nothing here is about networking, and the pods then need nothing of
// Docker's bridge, which other suites on a shared machine may be reshaping.
const HOST_NETWORK = { securityContext: { namespaceOptions: { network: 'NODE' as const } } };

describe('CRI v1.37 and v1.36 clients of one shim', () => {
  const f = useShim({ pod: { name: 'v137', linux: HOST_NETWORK } });
  const { run } = f;

  it('v1.37: gives a UTF-8 env value to the container byte for byte, and refuses values Docker cannot carry, naming the variable', async () => {
    const value = 'grüße ✓ 𝄞 — \u00a0end';
    const id = await runContainer(f.client, f.pod, busybox(run, 'env', { ...SLEEP_FOREVER, envs: [{ key: 'GREETING', value: Buffer.from(value, 'utf8') }] }));
    const res = await f.client.runtime.ExecSync({ containerId: id, cmd: PRINT_GREETING, timeout: 20 });
    assert.equal(res.exitCode, 0, res.stderr.toString());
    assert.deepEqual(res.stdout, Buffer.from(value, 'utf8'));
    for (const [bytes, why] of [[[0x61, 0xff, 0x62], /not valid UTF-8/], [[0x61, 0x00, 0x62], /NUL/]] as const) {
      const config = busybox(run, 'badenv', { envs: [{ key: 'FINE', value: Buffer.from('ok') }, { key: 'BLOB', value: Buffer.from(bytes) }] });
      await assert.rejects(
        f.client.runtime.CreateContainer({ podSandboxId: f.pod.id, config, sandboxConfig: f.pod.config }),
        rejectsWith(Code.INVALID_ARGUMENT, new RegExp(`^config\\.envs\\[1\\]\\.value of "BLOB": .*${why.source}`)),
      );
    }
  });

  it('v1.37: says mount_options is unsupported, refuses noexec naming the mount and option, answers CheckpointPod and RestorePod UNIMPLEMENTED', async () => {
    const { features } = await f.client.runtime.Status({});
    assert.equal(features?.mountOptions, false);
    const mounts = [{ hostPath: f.tempDir('v137mount'), containerPath: '/data', mountOptions: ['noexec'] }];
    await assert.rejects(
      f.client.runtime.CreateContainer({ podSandboxId: f.pod.id, config: busybox(run, 'noexec', { mounts }), sandboxConfig: f.pod.config }),
      rejectsWith(Code.INVALID_ARGUMENT, /^config\.mounts\[0\]\.mount_options\[0\]: Docker cannot apply "noexec" to a bind mount/),
    );
    await assert.rejects(
      f.client.runtime.CheckpointPod({ podSandboxId: f.pod.id, outputPath: f.tempDir('v137ckpt'), containerIds: [] }),
      rejectsWith(Code.UNIMPLEMENTED, /^CheckpointPod: cri-docker-shim does not checkpoint pods/),
    );
    await assert.rejects(
      f.client.runtime.RestorePod({ checkpointPath: '/nonexistent', config: f.pod.config }),
      rejectsWith(Code.UNIMPLEMENTED, /^RestorePod: /),
    );
  });

  it('v1.36: runs a pod and a container with a string env value and a stop signal of the old name, and stops it with that signal', async () => {
    const old = criV136Client(`unix://${f.shim.socket}`);
    try {
      const status = (await old.runtime.Status!({})) as { status: { conditions: Array<{ type: string; status: boolean }> } };
      assert.ok(status.status.conditions.every((c) => c.status), JSON.stringify(status));
      const podConfig = {
        metadata: { name: 'old', namespace: 'cds-test', uid: `${run}-old`, attempt: 0 },
        hostname: 'old',
        logDirectory: f.tempDir('v136logs'),
        labels: f.labels(),
        linux: HOST_NETWORK,
      };
      const { podSandboxId } = (await old.runtime.RunPodSandbox!({ config: podConfig })) as { podSandboxId: string };
      f.trackPod(podSandboxId);
      const value = 'grüße ✓';
      const config = {
        metadata: { name: 'stopsig', attempt: 0 },
        image: { image: TEST_BUSYBOX_IMAGE },
        labels: f.labels(),
        logPath: 'stopsig/0.log',
        envs: [{ key: 'GREETING', value }],
        stopSignal: 'SIGUSR1',
        command: ['sh', '-c', 'trap "exit 0" USR1; while true; do usleep 50000; done'],
      };
      const { containerId } = (await old.runtime.CreateContainer!({ podSandboxId, config, sandboxConfig: podConfig })) as { containerId: string };
      await old.runtime.StartContainer!({ containerId });
      const exec = (await old.runtime.ExecSync!({ containerId, cmd: PRINT_GREETING, timeout: 20 })) as { exitCode: number; stdout: Buffer };
      assert.deepEqual([exec.exitCode, exec.stdout.toString('utf8')], [0, value]);
      const running = (await old.runtime.ContainerStatus!({ containerId })) as { status: { state: string; stopSignal: string } };
      assert.deepEqual([running.status.state, running.status.stopSignal], ['CONTAINER_RUNNING', 'SIGUSR1']);
      // Exit code 0 only if the container's trap ran: SIGUSR1 reached it, not the timeout's SIGKILL.
      await old.runtime.StopContainer!({ containerId, timeout: 60 });
      const stopped = (await old.runtime.ContainerStatus!({ containerId })) as { status: { state: string; exitCode: number; stopSignal: string } };
      assert.deepEqual([stopped.status.state, stopped.status.exitCode, stopped.status.stopSignal], ['CONTAINER_EXITED', 0, 'SIGUSR1']);
      await old.runtime.RemoveContainer!({ containerId });
      await old.runtime.StopPodSandbox!({ podSandboxId });
      await old.runtime.RemovePodSandbox!({ podSandboxId });
    } finally {
      old.close();
    }
  });
});
