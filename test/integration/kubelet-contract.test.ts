// What kubelet and the CRI conformance suite expect where our first answers differed: Stop and
// Remove succeed for any ID that names nothing; StopPodSandbox does not wait out a grace period
// kubelet already gave; hostile sizes get a short answer at once and leave the connection serving.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import { rejectsWith } from '../support/client';
import { dockerApi } from '../support/images';
import { useShim } from '../support/fixture';
import { busybox, runContainer } from '../support/pods';

/** IDs of the shapes kubelet and conformance clients send for things that do not exist. */
const UNKNOWN_IDS = [
  '3f2504e0-4f89-11d3-9a0c-0305e82c3301', // a UUID
  'my-pod-name', // a name
  'x'.repeat(40), // a 40-character string
  '../../etc/passwd', // a path: must never become one
  'f'.repeat(64), // hex, well formed, unknown
];

describe('kubelet contract', () => {
  const f = useShim();
  const { run } = f;

  it('Stop and Remove of an ID that names nothing are OK, whatever the ID looks like', async () => {
    const r = f.client.runtime;
    for (const id of UNKNOWN_IDS) {
      assert.deepEqual(await r.StopPodSandbox({ podSandboxId: id }), {}, `StopPodSandbox ${id}`);
      assert.deepEqual(await r.RemovePodSandbox({ podSandboxId: id }), {}, `RemovePodSandbox ${id}`);
      assert.deepEqual(await r.StopContainer({ containerId: id, timeout: 1 }), {}, `StopContainer ${id}`);
      assert.deepEqual(await r.RemoveContainer({ containerId: id }), {}, `RemoveContainer ${id}`);
    }
    // Nothing was made under the root directory from those IDs.
    const made = fs.readdirSync(f.shim.rootDir, { recursive: true }).map(String);
    assert.ok(!made.some((f) => f.includes('passwd') || f.includes('my-pod-name')), `files: ${made.join(', ')}`);
  });

  it('an empty ID is still INVALID_ARGUMENT, and status calls still say NOT_FOUND', async () => {
    const r = f.client.runtime;
    await assert.rejects(r.StopPodSandbox({ podSandboxId: '' }), rejectsWith(Code.INVALID_ARGUMENT, /pod_sandbox_id is required/));
    await assert.rejects(r.RemovePodSandbox({ podSandboxId: '' }), rejectsWith(Code.INVALID_ARGUMENT, /pod_sandbox_id is required/));
    await assert.rejects(r.StopContainer({ containerId: '', timeout: 1 }), rejectsWith(Code.INVALID_ARGUMENT, /container_id is required/));
    await assert.rejects(r.RemoveContainer({ containerId: '' }), rejectsWith(Code.INVALID_ARGUMENT, /container_id is required/));
    await assert.rejects(r.ContainerStatus({ containerId: 'f'.repeat(64) }), rejectsWith(Code.NOT_FOUND));
    await assert.rejects(r.PodSandboxStatus({ podSandboxId: 'f'.repeat(64) }), rejectsWith(Code.NOT_FOUND));
  });

  it('StopPodSandbox kills what ignores SIGTERM at once, instead of waiting out a grace period', async () => {
    const pod = await f.startPod('stubborn');
    const id = await runContainer(f.client, pod, busybox(run, 'stubborn', { command: ['sh', '-c', "trap '' TERM; while :; do sleep 1; done"] }));
    const started = Date.now();
    await f.client.runtime.StopPodSandbox({ podSandboxId: pod.id });
    const tookMs = Date.now() - started;
    // Docker's default grace (and the old behaviour) is 10 s; a kill takes well under a second.
    assert.ok(tookMs < 5_000, `StopPodSandbox took ${tookMs} ms`);
    const inspect = await dockerApi().getContainer(id).inspect();
    assert.equal(inspect.State.Running, false);
    assert.equal(inspect.State.ExitCode, 137, 'killed by SIGKILL');
    const { status } = await f.client.runtime.PodSandboxStatus({ podSandboxId: pod.id });
    assert.equal(status?.state, 'SANDBOX_NOTREADY');
  });

  it('a 1 MB ID gets a short INVALID_ARGUMENT at once through a Node gRPC client', async () => {
    const huge = 'a'.repeat(1024 * 1024);
    const deadline = new Date(Date.now() + 15_000);
    for (const call of [
      () => f.client.runtime.ContainerStatus({ containerId: huge }, { deadline }),
      () => f.client.runtime.StopContainer({ containerId: huge, timeout: 1 }, { deadline }),
      () => f.client.runtime.PodSandboxStatus({ podSandboxId: huge }, { deadline }),
    ]) {
      await assert.rejects(call(), (err: { code: number; details: string }) => {
        rejectsWith(Code.INVALID_ARGUMENT, /is longer than 256 characters/)(err);
        assert.ok(err.details.length < 300, `details are ${err.details.length} characters`);
        assert.match(err.details, /\(1048576 characters\)/);
        return true;
      });
    }
  });

  it('labels and annotations beyond Kubernetes bounds are refused before any work', async () => {
    const r = f.client.runtime;
    const metadata = { name: `bounds-${run}`, namespace: 'cds-test', uid: `${run}-bounds`, attempt: 0 };
    await assert.rejects(
      r.RunPodSandbox({ config: { metadata, labels: { k: 'v'.repeat(300) } } }),
      rejectsWith(Code.INVALID_ARGUMENT, /config\.labels\["k"\]: .* is longer than 253 characters/),
    );
    await assert.rejects(
      r.RunPodSandbox({ config: { metadata, annotations: { big: 'v'.repeat(300 * 1024) } } }),
      rejectsWith(Code.INVALID_ARGUMENT, /config\.annotations: 307203 characters in all/),
    );
    await assert.rejects(
      r.RunPodSandbox({ config: { metadata: { ...metadata, name: 'n'.repeat(254) } } }),
      rejectsWith(Code.INVALID_ARGUMENT, /config\.metadata\.name: .* is longer than 253/),
    );
    const made = await dockerApi().listContainers({ all: true, filters: { name: [`bounds-${run}`] } });
    assert.deepEqual(made, [], 'no pause container was made');
  });

  it('a 17 MiB request is RESOURCE_EXHAUSTED and the connection keeps serving; 15 MiB is still read', async () => {
    const r = f.client.runtime;
    await assert.rejects(
      r.ContainerStatus({ containerId: 'a'.repeat(17 * 1024 * 1024) }),
      rejectsWith(Code.RESOURCE_EXHAUSTED),
    );
    assert.equal((await r.Version({})).runtimeName, 'docker');
    // Just under kubelet's limit, the message is taken and answered on its merits.
    await assert.rejects(
      r.RunPodSandbox({ config: { metadata: { name: 'big', namespace: 'x', uid: 'u', attempt: 0 }, annotations: { big: 'v'.repeat(15 * 1024 * 1024) } } }),
      rejectsWith(Code.INVALID_ARGUMENT, /config\.annotations/),
    );
    assert.equal((await r.Version({})).runtimeName, 'docker');
    assert.ok(fs.existsSync(path.join(f.shim.rootDir)), 'shim still has its state directory');
  });
});
