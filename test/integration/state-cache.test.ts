// The state cache against real Docker: what the list and status calls say is right after every
// mutating RPC, follows changes made behind the shim's back with the Docker API, and stays
// right when the event stream is lost (through a proxy in front of Docker that can be cut)
// until it is resynced; and the hot reads are answered without asking Docker.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import type { CriClient } from '../support/client';
import { rejectsWith } from '../support/client';
import { dockerApi, TEST_BUSYBOX_IMAGE, TEST_PAUSE_IMAGE } from '../support/images';
import { waitFor } from '../support/poll';
import { rfc3339ToNanos } from '../../src/util/time';
import { CLOCK_SLACK_MS } from '../../src/docker-cache/container-snapshot';
import { useShim } from '../support/fixture';
import { busybox, createBehindTheBack, runContainer, SLEEP_FOREVER } from '../support/pods';

/** Changes behind the shim's back must show within a second; the deadline leaves room for a loaded machine. */
const SEEN_WITHIN = { timeoutMs: 5_000 };

async function containerState(client: CriClient, id: string): Promise<string | undefined> {
  const { containers } = await client.runtime.ListContainers({ filter: { id } });
  return containers.find((c) => c.id === id)?.state;
}

async function sandboxState(client: CriClient, id: string): Promise<string | undefined> {
  const { items } = await client.runtime.ListPodSandbox({ filter: { id } });
  return items.find((s) => s.id === id)?.state;
}

describe('state cache: reads after the shim’s own changes and changes behind its back', () => {
  const f = useShim({ behindProxy: true });
  const { run } = f;

  it('reflects every mutating RPC in List* and *Status as soon as it returns', async () => {
    const pod = await f.startPod('mutate');
    assert.equal(await sandboxState(f.client, pod.id), 'SANDBOX_READY');
    assert.equal((await f.client.runtime.PodSandboxStatus({ podSandboxId: pod.id })).status?.state, 'SANDBOX_READY');

    const { containerId: id } = await f.client.runtime.CreateContainer({
      podSandboxId: pod.id,
      config: busybox(run, 'mutate', SLEEP_FOREVER),
      sandboxConfig: pod.config,
    });
    assert.equal(await containerState(f.client, id), 'CONTAINER_CREATED');
    assert.equal((await f.client.runtime.ContainerStatus({ containerId: id })).status?.state, 'CONTAINER_CREATED');
    assert.deepEqual(
      (await f.client.runtime.ListContainers({ filter: { podSandboxId: pod.id } })).containers.map((c) => c.id),
      [id],
    );

    await f.client.runtime.StartContainer({ containerId: id });
    assert.equal(await containerState(f.client, id), 'CONTAINER_RUNNING');
    assert.equal((await f.client.runtime.ContainerStatus({ containerId: id })).status?.state, 'CONTAINER_RUNNING');

    await f.client.runtime.UpdateContainerResources({ containerId: id, linux: { memoryLimitInBytes: '67108864' } });
    const updated = await f.client.runtime.ContainerStatus({ containerId: id });
    assert.equal(updated.status?.resources?.linux?.memoryLimitInBytes, '67108864');

    await f.client.runtime.StopContainer({ containerId: id, timeout: '0' });
    assert.equal(await containerState(f.client, id), 'CONTAINER_EXITED');
    assert.equal((await f.client.runtime.ContainerStatus({ containerId: id })).status?.state, 'CONTAINER_EXITED');

    await f.client.runtime.RemoveContainer({ containerId: id });
    assert.equal(await containerState(f.client, id), undefined);
    await assert.rejects(f.client.runtime.ContainerStatus({ containerId: id }), rejectsWith(Code.NOT_FOUND));

    await f.client.runtime.StopPodSandbox({ podSandboxId: pod.id });
    assert.equal(await sandboxState(f.client, pod.id), 'SANDBOX_NOTREADY');
    assert.equal((await f.client.runtime.PodSandboxStatus({ podSandboxId: pod.id })).status?.state, 'SANDBOX_NOTREADY');

    await f.removePod(pod);
    assert.equal(await sandboxState(f.client, pod.id), undefined);
    await assert.rejects(f.client.runtime.PodSandboxStatus({ podSandboxId: pod.id }), rejectsWith(Code.NOT_FOUND));
  });

  it('answers the polled reads without asking Docker', async () => {
    const pod = await f.startPod('quiet');
    const id = await runContainer(f.client, pod, busybox(run, 'quiet', SLEEP_FOREVER));
    const polls = async (): Promise<void> => {
      await f.client.runtime.ListPodSandbox({});
      await f.client.runtime.ListPodSandbox({ filter: { id: pod.id } });
      await f.client.runtime.ListContainers({});
      await f.client.runtime.ListContainers({ filter: { podSandboxId: pod.id } });
      await f.client.runtime.PodSandboxStatus({ podSandboxId: pod.id });
      await f.client.runtime.ContainerStatus({ containerId: id });
      await f.client.images.ListImages({});
      await f.client.images.ImageStatus({ image: { image: TEST_BUSYBOX_IMAGE } });
    };
    await polls(); // the image answers are fetched once
    const seen = f.proxy.requests.length;
    await polls();
    const asked = f.proxy.requests.slice(seen);
    // Other suites share this Docker: events about their containers make the cache re-inspect
    // those, and their pulls and tags make it ask for images again. Nothing may be a container
    // list, or about this pod and container.
    const ours = asked.filter((r) => /\/containers\/json/.test(r) || r.includes(id) || r.includes(pod.id));
    assert.deepEqual(ours, []);
    await f.removePod(pod);
  });

  it('shows a container killed, updated, renamed or removed with the Docker API', async () => {
    const pod = await f.startPod('behind');
    const id = await runContainer(f.client, pod, busybox(run, 'behind', SLEEP_FOREVER));
    const docker = dockerApi().getContainer(id);

    await docker.update({ Memory: 96 * 1024 * 1024, MemorySwap: -1 });
    await waitFor(
      'the new memory limit in ContainerStatus',
      async () => (await f.client.runtime.ContainerStatus({ containerId: id })).status?.resources?.linux?.memoryLimitInBytes === String(96 * 1024 * 1024),
      SEEN_WITHIN,
    );

    const renamed = `k8s_renamed_${pod.config.metadata!.name}_cds-test_${pod.config.metadata!.uid}_4`;
    await docker.rename({ name: renamed });
    await waitFor(
      'the new name in ListContainers and ContainerStatus',
      async () => {
        const [listed] = (await f.client.runtime.ListContainers({ filter: { id } })).containers;
        const { status } = await f.client.runtime.ContainerStatus({ containerId: id });
        return listed?.metadata?.name === 'renamed' && listed.metadata.attempt === 4 && status?.metadata?.name === 'renamed';
      },
      SEEN_WITHIN,
    );

    await docker.kill({ signal: 'SIGKILL' });
    await waitFor(
      'the killed container to be EXITED in list and status',
      async () =>
        (await containerState(f.client, id)) === 'CONTAINER_EXITED' &&
        (await f.client.runtime.ContainerStatus({ containerId: id })).status?.state === 'CONTAINER_EXITED',
      SEEN_WITHIN,
    );

    await docker.remove({ force: true });
    await waitFor('the removed container to leave the list', async () => (await containerState(f.client, id)) === undefined, SEEN_WITHIN);
    await assert.rejects(f.client.runtime.ContainerStatus({ containerId: id }), rejectsWith(Code.NOT_FOUND));

    await dockerApi().getContainer(pod.id).kill({ signal: 'SIGKILL' });
    await waitFor('the killed pause container to make the pod NOTREADY', async () => (await sandboxState(f.client, pod.id)) === 'SANDBOX_NOTREADY', SEEN_WITHIN);
    await f.removePod(pod);
  });

  it('lists a container created and started with the shim’s labels through the Docker API', async () => {
    const pod = await f.startPod('foreign');
    const id = await createBehindTheBack(run, pod, 'foreign');
    await waitFor('the container made behind the back to be listed', async () => (await containerState(f.client, id)) === 'CONTAINER_CREATED', SEEN_WITHIN);
    await dockerApi().getContainer(id).start();
    await waitFor('it to be RUNNING', async () => (await containerState(f.client, id)) === 'CONTAINER_RUNNING', SEEN_WITHIN);
    const { status } = await f.client.runtime.ContainerStatus({ containerId: id });
    assert.equal(status?.metadata?.name, 'foreign');
    await f.removePod(pod);
    assert.equal(await containerState(f.client, id), undefined, 'RemovePodSandbox removed it, and the list says so at once');
  });

  it('follows image tags added and removed with the Docker API', async () => {
    const tag = `${run}`;
    const ref = `cri-docker-shim-test/cache-tag:${tag}`;
    const absent = await f.client.images.ImageStatus({ image: { image: ref } });
    assert.equal(absent.image, null);
    await dockerApi().getImage(TEST_BUSYBOX_IMAGE).tag({ repo: 'cri-docker-shim-test/cache-tag', tag });
    try {
      await waitFor('the new tag in ImageStatus and ListImages', async () => {
        const { image } = await f.client.images.ImageStatus({ image: { image: ref } });
        const { images } = await f.client.images.ListImages({});
        return image?.repoTags.includes(ref) && images.some((i) => i.repoTags.includes(ref));
      }, SEEN_WITHIN);
    } finally {
      await dockerApi().getImage(ref).remove({ noprune: true });
    }
    await waitFor('the tag to be gone', async () => (await f.client.images.ImageStatus({ image: { image: ref } })).image === null, SEEN_WITHIN);
    const { images } = await f.client.images.ListImages({});
    assert.ok(!images.some((i) => i.repoTags.includes(ref)));
  });
});

describe('state cache: a lost event stream', () => {
  const f = useShim({ behindProxy: true });
  const { run } = f;

  it('is detected: reads go to Docker (and fail while it is unreachable), never to a stale cache', async () => {
    const pod = await f.startPod('lost');
    const id = await runContainer(f.client, pod, busybox(run, 'lost', SLEEP_FOREVER));
    assert.equal(await containerState(f.client, id), 'CONTAINER_RUNNING');

    await f.proxy.down();
    await waitFor(
      'reads to fail once the event stream is gone',
      async () => {
        try {
          await f.client.runtime.ListContainers({ filter: { id } });
          return false;
        } catch (err) {
          return rejectsWith(Code.UNAVAILABLE)(err);
        }
      },
      SEEN_WITHIN,
    );

    // Changes the shim cannot hear of: made on Docker's own socket.
    await dockerApi().getContainer(id).remove({ force: true });
    const foreign = await createBehindTheBack(run, pod, 'arrived');
    await assert.rejects(f.client.runtime.ListContainers({}), rejectsWith(Code.UNAVAILABLE));
    await assert.rejects(f.client.runtime.ListPodSandbox({}), rejectsWith(Code.UNAVAILABLE));
    await assert.rejects(f.client.runtime.ContainerStatus({ containerId: id }), rejectsWith(Code.UNAVAILABLE));

    await f.proxy.up();
    // Straight away, before or after the resync, reads are Docker's truth.
    assert.equal(await containerState(f.client, id), undefined, 'the container removed meanwhile is not listed');
    assert.equal(await containerState(f.client, foreign), 'CONTAINER_CREATED', 'the container created meanwhile is listed');
    await assert.rejects(f.client.runtime.ContainerStatus({ containerId: id }), rejectsWith(Code.NOT_FOUND));

    // And the cache takes over again: a list no longer reaches Docker.
    await waitFor(
      'the cache to be resynced and answering',
      async () => {
        const seen = f.proxy.requests.length;
        await f.client.runtime.ListContainers({ filter: { podSandboxId: pod.id } });
        return !f.proxy.requests.slice(seen).some((r) => r.includes('/containers/json'));
      },
      { timeoutMs: 10_000 },
    );
    assert.equal(await containerState(f.client, id), undefined);
    assert.equal(await containerState(f.client, foreign), 'CONTAINER_CREATED');

    // Events flow on the new stream.
    await dockerApi().getContainer(foreign).remove({ force: true });
    await waitFor('a removal after the resync to show', async () => (await containerState(f.client, foreign)) === undefined, SEEN_WITHIN);
    await f.removePod(pod);
  });

  it('keeps Status answering from a direct ping', async () => {
    const { status } = await f.client.runtime.Status({});
    assert.equal(status?.conditions.find((c) => c.type === 'RuntimeReady')?.status, true);
    await f.proxy.down();
    try {
      const down = await f.client.runtime.Status({});
      assert.equal(down.status?.conditions.find((c) => c.type === 'RuntimeReady')?.status, false);
    } finally {
      await f.proxy.up();
    }
    await waitFor('Status to be ready again', async () => (await f.client.runtime.Status({})).status?.conditions.find((c) => c.type === 'RuntimeReady')?.status === true);
    await waitFor('the pause image to be known again', async () => (await f.client.images.ImageStatus({ image: { image: TEST_PAUSE_IMAGE } })).image !== null);
  });
});

describe('state cache: a restart starts from the containers the last run held', () => {
  const f = useShim({ shim: false });
  const { run } = f;

  it('keeps what no Docker event touched since the save, reads again what changed while it was down (stopped, restarted), and answers as before', async () => {
    const rootDir = f.tempDir('container-snapshot');
    let { shim, stop } = await f.startShim({ rootDir });
    const pod = await f.startPod('snapshot', {}, shim.client);
    const [stays, stopsMeanwhile, restartsMeanwhile] = [
      await runContainer(shim.client, pod, busybox(run, 'stays', SLEEP_FOREVER)),
      await runContainer(shim.client, pod, busybox(run, 'stops', SLEEP_FOREVER)),
      await runContainer(shim.client, pod, busybox(run, 'restarts', SLEEP_FOREVER)),
    ];
    const listed = async (): Promise<Array<[string, string | undefined, string | undefined]>> =>
      (await shim.client.runtime.ListContainers({ filter: { podSandboxId: pod.id } })).containers.map((c) => [c.id!, c.state, c.createdAt]).sort() as Array<[string, string | undefined, string | undefined]>;
    const before = await listed();
    const startedBefore = (await shim.client.runtime.ContainerStatus({ containerId: restartsMeanwhile })).status!.startedAt;
    // Events less than the clock slack before the save count as after it: past it, only what
    // happens while the shim is down touches these containers.
    const madeAtMs = Date.now();
    await waitFor('the containers\' events to be older than the clock slack', () => Date.now() > madeAtMs + CLOCK_SLACK_MS, { timeoutMs: 2 * CLOCK_SLACK_MS });
    await stop();
    const file = `${rootDir}/container-snapshot.json`;
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as { containers: Array<{ Id: string }> };
    assert.ok([pod.id, stays, stopsMeanwhile, restartsMeanwhile].every((id) => saved.containers.some((c) => c.Id === id)), 'the stop saved the pod and its containers');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);

    await dockerApi().getContainer(stopsMeanwhile).stop({ t: 0 });
    // Running again under the same name: only Docker's events tell it from the saved document.
    await dockerApi().getContainer(restartsMeanwhile).restart({ t: 0 });
    const restarted = await dockerApi().getContainer(restartsMeanwhile).inspect();
    ({ shim, stop } = await f.startShim({ rootDir }));
    const startedAfter = (await shim.client.runtime.ContainerStatus({ containerId: restartsMeanwhile })).status!.startedAt;
    assert.equal(startedAfter, rfc3339ToNanos(restarted.State.StartedAt), 'the restarted run, from the first answer on');
    assert.notEqual(startedAfter, startedBefore);
    const after = await listed();
    assert.deepEqual(after, before.map(([id, state, createdAt]) => [id, id === stopsMeanwhile ? 'CONTAINER_EXITED' : state, createdAt]));
    const lines = shim.output().split('\n');
    const synced = lines.find((l) => l.includes('"state cache synced with Docker"'));
    const fromSnapshot = (JSON.parse(synced!) as { fromSnapshot: number }).fromSnapshot;
    const cold = lines.find((l) => l.includes('"container snapshot not used; every container inspected"'));
    assert.ok(fromSnapshot >= 2, `the pod and the container that stayed came from the snapshot (${fromSnapshot} did${cold ? `; ${cold}` : ''})`);
    const status = (await shim.client.runtime.ContainerStatus({ containerId: stopsMeanwhile })).status!;
    assert.deepEqual([status.state, status.exitCode], ['CONTAINER_EXITED', 137]);
  });
});
