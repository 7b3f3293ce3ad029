// The pod sandbox lifecycle against real Docker: run, status, list, stop, remove; what
// happens when the pause container dies or disappears behind the shim's back; stale names;
// the pod's own containers being stopped and removed with it, those the shim made a moment
// before too (with Docker slow to inspect, and with the state cache unsynced); checkpoints on disk.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import { rejectsWith, type CriClient } from '../support/client';
import type { DockerProxy } from '../support/docker-proxy';
import { dockerApi, TEST_PAUSE_IMAGE } from '../support/images';
import { waitFor } from '../support/poll';
import { useShim } from '../support/fixture';
import { busybox, podConfig, startBeside, type TestPod } from '../support/pods';
import { CATCH_UP_WAIT_MS } from '../../src/docker-cache/state-cache';

const SANDBOX_ID_LABEL = 'io.kubernetes.sandbox.id';
/** The labels CreateContainer gives a container of pod `id`. */
const memberLabels = (id: string): Record<string, string> => ({ 'io.kubernetes.docker.type': 'container', [SANDBOX_ID_LABEL]: id });

describe('pod sandbox lifecycle', () => {
  const f = useShim();
  const { run } = f;

  const checkpointFile = (id: string): string => path.join(f.shim.rootDir, 'sandbox', `${id}.json`);
  /** Made behind its back, the container is the shim's once its lists show it running (Docker's events reached it). */
  const knownToShim = async (containerId: string): Promise<void> => {
    await waitFor('the shim to list the container running', async () => {
      const { containers } = await f.client.runtime.ListContainers({ filter: { id: containerId } });
      return containers.some((c) => c.state === 'CONTAINER_RUNNING');
    });
  };

  it('runs a sandbox and reports it READY with what was given', async () => {
    const config = podConfig(run, { annotations: { 'example.com/note': 'hello', empty: '' }, hostname: 'lifecycle-host' });
    const before = BigInt(Date.now()) * 1_000_000n;
    const { podSandboxId: id } = await f.client.runtime.RunPodSandbox({ config });
    assert.match(id, /^[0-9a-f]{64}$/);

    const { status, timestamp } = await f.client.runtime.PodSandboxStatus({ podSandboxId: id });
    assert.ok(status);
    assert.equal(status.id, id);
    assert.equal(status.state, 'SANDBOX_READY');
    assert.deepEqual(status.metadata, config.metadata);
    assert.deepEqual(status.labels, config.labels);
    assert.deepEqual(status.annotations, config.annotations);
    assert.equal(status.runtimeHandler, '');
    assert.ok(BigInt(status.createdAt) >= before - 1_000_000_000n, 'createdAt is recent');
    assert.ok(BigInt(timestamp) >= BigInt(status.createdAt));
    assert.match(status.network?.ip ?? '', /^\d+\.\d+\.\d+\.\d+$/);
    const inspect = await dockerApi().getContainer(id).inspect();
    assert.equal(status.network?.ip, Object.values(inspect.NetworkSettings.Networks)[0]?.IPAddress);
    assert.deepEqual(status.linux?.namespaces?.options, { network: 'POD', pid: 'CONTAINER', ipc: 'POD', targetId: '', usernsOptions: null });

    // dockershim's name and labels, the configured pause image
    assert.equal(inspect.Name, `/k8s_POD_${config.metadata!.name}_sandbox-test_${config.metadata!.uid}_0`);
    assert.equal(inspect.Config.Labels['io.kubernetes.docker.type'], 'podsandbox');
    assert.equal(inspect.Config.Labels['annotation.example.com/note'], 'hello');
    assert.equal(inspect.Config.Image, TEST_PAUSE_IMAGE);
    assert.equal(inspect.HostConfig.ShmSize, 64 * 1024 * 1024);

    // a unique prefix works as docker's does
    const byPrefix = await f.client.runtime.PodSandboxStatus({ podSandboxId: id.slice(0, 12) });
    assert.equal(byPrefix.status?.id, id);

    const listed = await f.client.runtime.ListPodSandbox({ filter: { id } });
    assert.equal(listed.items.length, 1);
    assert.equal(listed.items[0]!.state, 'SANDBOX_READY');
    assert.equal(listed.items[0]!.createdAt, status.createdAt, 'list and status agree on createdAt');
    assert.deepEqual(listed.items[0]!.annotations, config.annotations);

    const checkpoint = JSON.parse(fs.readFileSync(checkpointFile(id), 'utf8')) as Record<string, unknown>;
    assert.equal(checkpoint.name, config.metadata!.name);
    assert.equal(checkpoint.namespace, 'sandbox-test');
    assert.equal(checkpoint.hostNetwork, false);
    assert.match(String(checkpoint.checksum), /^[0-9a-f]{64}$/);

    // verbose adds an info document
    const verbose = await f.client.runtime.PodSandboxStatus({ podSandboxId: id, verbose: true });
    const info = JSON.parse(verbose.info.info!) as { pid: number; image: string };
    assert.ok(info.pid > 0);
    assert.equal(info.image, TEST_PAUSE_IMAGE);

    await f.client.runtime.StopPodSandbox({ podSandboxId: id });
    const stopped = await f.client.runtime.PodSandboxStatus({ podSandboxId: id });
    assert.equal(stopped.status?.state, 'SANDBOX_NOTREADY');
    assert.equal(stopped.status?.network?.ip, '');
    // stop is idempotent
    await f.client.runtime.StopPodSandbox({ podSandboxId: id });

    await f.client.runtime.RemovePodSandbox({ podSandboxId: id });
    await assert.rejects(f.client.runtime.PodSandboxStatus({ podSandboxId: id }), rejectsWith(Code.NOT_FOUND, /not found/));
    assert.equal((await f.client.runtime.ListPodSandbox({ filter: { id } })).items.length, 0);
    assert.equal(fs.existsSync(checkpointFile(id)), false, 'checkpoint removed');
    await assert.rejects(dockerApi().getContainer(id).inspect(), (e: { statusCode?: number }) => e.statusCode === 404);
    // remove and stop of a removed sandbox succeed
    await f.client.runtime.RemovePodSandbox({ podSandboxId: id });
    await f.client.runtime.StopPodSandbox({ podSandboxId: id });
  });

  it('answers NOT_FOUND for an unknown ID and INVALID_ARGUMENT for a malformed one (Remove of one names nothing: OK)', async () => {
    await assert.rejects(f.client.runtime.PodSandboxStatus({ podSandboxId: 'f'.repeat(64) }), rejectsWith(Code.NOT_FOUND));
    await assert.rejects(f.client.runtime.PodSandboxStatus({ podSandboxId: '../etc' }), rejectsWith(Code.INVALID_ARGUMENT, /pod_sandbox_id/));
    await assert.rejects(f.client.runtime.StopPodSandbox({ podSandboxId: '' }), rejectsWith(Code.INVALID_ARGUMENT, /pod_sandbox_id is required/));
    assert.deepEqual(await f.client.runtime.RemovePodSandbox({ podSandboxId: 'x/y' }), {});
    assert.ok(!fs.existsSync(path.join(f.shim.rootDir, 'sandbox', 'x')), 'the ID reached no file path');
  });

  it('stops the pod’s containers with it, and removes them with it', async () => {
    const { podSandboxId: id } = await f.client.runtime.RunPodSandbox({ config: podConfig(run) });
    // A container of the pod, made behind the shim's back the way CreateContainer labels them.
    const member = await startBeside(run, id, 'trap "exit 0" TERM; while true; do sleep 1; done', memberLabels(id));
    await knownToShim(member);
    await f.client.runtime.StopPodSandbox({ podSandboxId: id });
    const memberState = await dockerApi().getContainer(member).inspect();
    assert.equal(memberState.State.Running, false, 'pod container stopped');
    const pauseState = await dockerApi().getContainer(id).inspect();
    assert.equal(pauseState.State.Running, false, 'pause container stopped');
    assert.ok(
      Date.parse(memberState.State.FinishedAt) <= Date.parse(pauseState.State.FinishedAt),
      'the pod’s container stopped before the pause container',
    );

    await f.client.runtime.RemovePodSandbox({ podSandboxId: id });
    await assert.rejects(dockerApi().getContainer(member).inspect(), (e: { statusCode?: number }) => e.statusCode === 404);
  });

  it('removes a running sandbox and its running containers', async () => {
    const { podSandboxId: id } = await f.client.runtime.RunPodSandbox({ config: podConfig(run) });
    const member = await startBeside(run, id, 'while true; do sleep 1; done', memberLabels(id));
    await knownToShim(member);
    await f.client.runtime.RemovePodSandbox({ podSandboxId: id });
    await assert.rejects(dockerApi().getContainer(member).inspect(), (e: { statusCode?: number }) => e.statusCode === 404);
    await assert.rejects(dockerApi().getContainer(id).inspect(), (e: { statusCode?: number }) => e.statusCode === 404);
    assert.equal(fs.existsSync(checkpointFile(id)), false);
  });

  it('reports NOTREADY after the pause container is killed from outside', async () => {
    const { podSandboxId: id } = await f.client.runtime.RunPodSandbox({ config: podConfig(run) });
    await dockerApi().getContainer(id).kill({ signal: 'SIGKILL' });
    await waitFor('the sandbox to be NOTREADY', async () => {
      const { status } = await f.client.runtime.PodSandboxStatus({ podSandboxId: id });
      return status?.state === 'SANDBOX_NOTREADY';
    });
    const listed = await f.client.runtime.ListPodSandbox({ filter: { id } });
    assert.equal(listed.items[0]?.state, 'SANDBOX_NOTREADY');
    await f.client.runtime.StopPodSandbox({ podSandboxId: id });
    await f.client.runtime.RemovePodSandbox({ podSandboxId: id });
  });

  it('lists a sandbox whose pause container is gone as NOTREADY from its checkpoint, until removed', async () => {
    const config = podConfig(run, { annotations: { kept: 'yes' } });
    const { podSandboxId: id } = await f.client.runtime.RunPodSandbox({ config });
    await dockerApi().getContainer(id).remove({ force: true });

    const listed = await f.client.runtime.ListPodSandbox({ filter: { id } });
    assert.equal(listed.items.length, 1);
    const item = listed.items[0]!;
    assert.equal(item.state, 'SANDBOX_NOTREADY');
    assert.deepEqual(item.metadata, config.metadata);
    assert.deepEqual(item.labels, config.labels);
    assert.deepEqual(item.annotations, config.annotations);

    const { status } = await f.client.runtime.PodSandboxStatus({ podSandboxId: id.slice(0, 16) });
    assert.equal(status?.state, 'SANDBOX_NOTREADY');
    assert.equal(status?.id, id);

    await f.client.runtime.StopPodSandbox({ podSandboxId: id });
    await f.client.runtime.RemovePodSandbox({ podSandboxId: id });
    assert.equal((await f.client.runtime.ListPodSandbox({ filter: { id } })).items.length, 0);
    assert.equal(fs.existsSync(checkpointFile(id)), false);
  });

  it('replaces a stale sandbox of the same name, and refuses a live one', async () => {
    const config = podConfig(run);
    const { podSandboxId: first } = await f.client.runtime.RunPodSandbox({ config });
    await assert.rejects(
      f.client.runtime.RunPodSandbox({ config }),
      rejectsWith(Code.ALREADY_EXISTS, new RegExp(`k8s_POD_${config.metadata!.name}.*already in use by running sandbox ${first}`)),
    );
    await dockerApi().getContainer(first).stop({ t: 0 });
    // Stopped behind its back: the shim's store has it stopped once Docker's events reached it.
    await waitFor('the shim to see the sandbox stopped', async () => (await f.client.runtime.PodSandboxStatus({ podSandboxId: first })).status?.state === 'SANDBOX_NOTREADY');
    const { podSandboxId: second } = await f.client.runtime.RunPodSandbox({ config });
    assert.notEqual(second, first);
    await assert.rejects(dockerApi().getContainer(first).inspect(), (e: { statusCode?: number }) => e.statusCode === 404);
    assert.equal(fs.existsSync(checkpointFile(first)), false, 'the stale checkpoint went with it');
    assert.equal((await f.client.runtime.PodSandboxStatus({ podSandboxId: second })).status?.state, 'SANDBOX_READY');
    await f.client.runtime.RemovePodSandbox({ podSandboxId: second });
  });

  it('treats a corrupt checkpoint as absent and removes it when it loads them', async () => {
    // Checkpoints are read from disk once, at start-up (and kept in memory after), so the
    // files are corrupted between two runs of the shim on the same state directory.
    const rootDir = f.tempDir('corrupt-checkpoint');
    const file = (id: string): string => path.join(rootDir, 'sandbox', `${id}.json`);
    const { shim: first } = await f.startShim({ rootDir });
    const { podSandboxId: id } = await first.client.runtime.RunPodSandbox({ config: podConfig(run) });
    const other = await first.client.runtime.RunPodSandbox({ config: podConfig(run) });
    await first.stop();
    await dockerApi().getContainer(id).remove({ force: true });
    await dockerApi().getContainer(other.podSandboxId).remove({ force: true });
    fs.writeFileSync(file(id), fs.readFileSync(file(id), 'utf8').replace('"hostNetwork": false', '"hostNetwork": true'));
    // not JSON at all: same treatment
    fs.writeFileSync(file(other.podSandboxId), '{"version": "v1", trunc');
    // Without cri-dockerd's checkpoints, which would stand in for ours (cri-dockerd-adopt.test.ts).
    for (const gone of [id, other.podSandboxId]) fs.rmSync(path.join(rootDir, 'sandbox', gone));

    const { shim: second } = await f.startShim({ rootDir });
    assert.equal((await second.client.runtime.ListPodSandbox({ filter: { id } })).items.length, 0);
    assert.equal(fs.existsSync(file(id)), false, 'corrupt checkpoint removed');
    assert.match(second.output(), /removing corrupt sandbox checkpoint/);
    await assert.rejects(second.client.runtime.PodSandboxStatus({ podSandboxId: id }), rejectsWith(Code.NOT_FOUND));
    assert.equal((await second.client.runtime.ListPodSandbox({ filter: { id: other.podSandboxId } })).items.length, 0);
    assert.equal(fs.existsSync(file(other.podSandboxId)), false);
  });

  it('runs with a named runtime handler (a Docker runtime) and reports it back', async () => {
    const runtime = (await dockerApi().info()).DefaultRuntime as string;
    const config = podConfig(run);
    const { podSandboxId: id } = await f.client.runtime.RunPodSandbox({ config, runtimeHandler: runtime });
    assert.equal((await dockerApi().getContainer(id).inspect()).HostConfig.Runtime, runtime);
    assert.equal((await f.client.runtime.PodSandboxStatus({ podSandboxId: id })).status?.runtimeHandler, runtime);
    const [listed] = (await f.client.runtime.ListPodSandbox({ filter: { id } })).items;
    assert.equal(listed?.runtimeHandler, runtime);
    assert.deepEqual(listed?.labels, config.labels, 'the handler label is not handed back as a pod label');
    await f.client.runtime.RemovePodSandbox({ podSandboxId: id });
  });

  it('applies a localhost seccomp profile from the node', async () => {
    const dir = f.tempDir('seccomp');
    const profile = path.join(dir, 'allow.json');
    fs.writeFileSync(profile, JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW' }, null, 2));
    const config = podConfig(run, { linux: { securityContext: { seccomp: { profileType: 'Localhost', localhostRef: profile } } } });
    const { podSandboxId: id } = await f.client.runtime.RunPodSandbox({ config });
    const opts = (await dockerApi().getContainer(id).inspect()).HostConfig.SecurityOpt as string[];
    assert.ok(opts.some((o) => o.startsWith('seccomp=') && o.includes('SCMP_ACT_ALLOW')), JSON.stringify(opts));
    await f.client.runtime.RemovePodSandbox({ podSandboxId: id });
  });
});

describe('pod sandbox lifecycle: containers the shim made a moment before the pod is stopped or removed', () => {
  const f = useShim();
  const { run } = f;

  /** A busybox container of `pod` that ends at once on SIGTERM, created (and started) through `client`. */
  async function member(client: CriClient, pod: TestPod, name: string, start: boolean): Promise<string> {
    const config = busybox(run, name, { command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'] });
    const { containerId } = await client.runtime.CreateContainer({ podSandboxId: pod.id, config, sandboxConfig: pod.config });
    if (start) await client.runtime.StartContainer({ containerId });
    return containerId;
  }
  const running = async (id: string): Promise<boolean> => (await dockerApi().getContainer(id).inspect()).State.Running;
  const gone = (id: string) => assert.rejects(dockerApi().getContainer(id).inspect(), (e: { statusCode?: number }) => e.statusCode === 404);

  /** Right after StartContainer, StopPodSandbox; right after CreateContainer, RemovePodSandbox: nothing is left running, nothing behind. */
  async function stopAndRemoveRightAfter(client: CriClient, pod: TestPod): Promise<void> {
    const started = await member(client, pod, 'started', true);
    await client.runtime.StopPodSandbox({ podSandboxId: pod.id });
    assert.equal(await running(started), false, 'the container started a moment before is stopped with the pod');
    assert.equal(await running(pod.id), false);
    const created = await member(client, pod, 'created', false);
    await client.runtime.RemovePodSandbox({ podSandboxId: pod.id });
    await gone(started);
    await gone(created);
    await gone(pod.id);
  }

  /** Whether the proxy passed Docker a list of the pod's containers by its sandbox label. */
  const listedPodContainers = (proxy: DockerProxy, podId: string): boolean =>
    proxy.requests.some((r) => r.includes('/containers/json') && decodeURIComponent(r).includes(`io.kubernetes.sandbox.id=${podId}`));

  it('stops and removes them with the pod (the state cache applied their changes)', async () => {
    await stopAndRemoveRightAfter(f.client, await f.startPod('late'));
  });

  it('stops and removes them with the pod while Docker is slower than CATCH_UP_WAIT_MS to inspect (from Docker’s list)', async () => {
    const { shim, proxy } = await f.startShimBehindProxy();
    const pod = await f.startPod('late-slow', {}, shim.client);
    // Every container inspect, the state cache's refreshes among them, is answered late.
    proxy.delay(/^GET \/(v[\d.]+\/)?containers\/[0-9a-f]{64}\/json/, CATCH_UP_WAIT_MS + 1_500);
    await stopAndRemoveRightAfter(shim.client, pod);
    assert.ok(listedPodContainers(proxy, pod.id), 'the pod’s containers came from Docker’s list');
  });

  it('stops and removes them with the pod while the state cache is not synced (from Docker’s list)', async () => {
    const { shim, proxy } = await f.startShimBehindProxy();
    const pod = await f.startPod('late-unsynced', {}, shim.client);
    // The event stream is cut and refused from now on: the cache stays unsynced, the rest passes.
    proxy.answer(/^GET \/(v[\d.]+\/)?events/, 500, 'event stream refused by the test');
    await proxy.down();
    await proxy.up();
    await waitFor('the shim’s lists to go to Docker', async () => {
      const seen = proxy.requests.length;
      await shim.client.runtime.ListPodSandbox({ filter: { id: pod.id } });
      return proxy.requests.slice(seen).some((r) => r.includes('/containers/json'));
    });
    await stopAndRemoveRightAfter(shim.client, pod);
    assert.ok(listedPodContainers(proxy, pod.id), 'the pod’s containers came from Docker’s list');
  });
});
