// The state cache, the caching client and the store of the shim's objects over it, against the
// fake Docker (test/support/fake-docker.ts): when reads come from the cache and when they go to Docker, what events do, what a lost stream or a failed re-inspect
// does, and that changes to one container are applied in order.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { ContainerInspect } from '../../../src/docker/types';
import { DockerUnreachableError } from '../../../src/errors';
import { CachingDockerClient } from '../../../src/docker-cache/caching-client';
import { ContainerDocuments } from '../../../src/docker-cache/container-documents';
import { DockerStateCache } from '../../../src/docker-cache/state-cache';
import { ShimObjectStore } from '../../../src/object-store/object-store';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker, type FaultHandle } from '../../support/fake-docker';
import { waitFor } from '../../support/poll';
import { inspectDoc, runningState } from '../../support/fixtures/docker-container';

const TYPE = 'io.kubernetes.docker.type';
const ID_A = 'a'.repeat(64);
const ID_B = 'b'.repeat(64);
const ID_X = 'e'.repeat(64);

const CONTAINER = { [TYPE]: 'container' };

function doc(id: string, labels: Record<string, string>, running = true): ContainerInspect {
  return inspectDoc({
    Id: id,
    Name: `/k8s_c_${id.slice(0, 4)}_ns_uid_0`,
    State: running ? runningState() : { Status: 'exited', StartedAt: '2026-11-22T02:33:52Z' },
    Config: { Labels: labels },
  });
}

/** A Docker that holds `containers` and has the image behind their Image column. */
function fakeDocker(...containers: ContainerInspect[]): FakeDocker {
  const docker = new FakeDocker();
  docker.addImage('busybox', { Id: 'sha256:1111' });
  for (const c of containers) docker.containers.set(c.Id, c);
  return docker;
}

/** Docker stops answering: every call fails until `clear()`. */
function goUnreachable(docker: FakeDocker): FaultHandle {
  return docker.fail('*', { error: () => new DockerUnreachableError('cannot reach Docker'), times: Infinity });
}

interface Cached {
  cache: DockerStateCache;
  client: CachingDockerClient;
  objects: ShimObjectStore;
}

function setUp(docker: FakeDocker): Cached {
  const cache = new DockerStateCache(docker, silentLogger(), { initialMs: 5, maxMs: 20, subscribeTimeoutMs: 1_000 });
  return { cache, client: new CachingDockerClient(docker, cache), objects: new ShimObjectStore(docker, cache) };
}

/** The IDs of the shim's containers, as the store finds them. */
async function containerIds(s: Cached): Promise<string[]> {
  return (await s.objects.list({ kind: 'container' })).map((o) => o.id);
}

describe('state cache with a fake Docker', () => {
  let cache: DockerStateCache | undefined;
  afterEach(async () => {
    await cache?.stop();
    cache = undefined;
  });

  /** The cache and caching client over `docker`, started; the cache is stopped after the test. */
  async function started(docker: FakeDocker): Promise<Cached> {
    const s = setUp(docker);
    cache = s.cache;
    await s.cache.start();
    return s;
  }

  it('holds only the shim’s containers and answers shim queries without Docker', async () => {
    const docker = fakeDocker(doc(ID_A, CONTAINER), doc(ID_X, { other: 'x' }));
    const s = await started(docker);
    assert.equal(s.cache.synced, true);
    assert.equal(s.cache.containers.size, 1);

    docker.calls.length = 0;
    assert.deepEqual(await containerIds(s), [ID_A]);
    assert.equal((await s.client.inspectContainer(ID_A)).Id, ID_A);
    assert.deepEqual(docker.callLines(), ['inspectImage busybox'], 'only the image name behind the Image column, once');
    await containerIds(s);
    assert.equal(docker.calls.length, 1);

    await s.client.listContainers({ all: true });
    await s.client.inspectContainer(ID_X);
    assert.equal((await s.client.inspectContainer(ID_A.slice(0, 12))).Id, ID_A);
    assert.deepEqual(
      docker.callLines().slice(1),
      ['listContainers {"all":true}', `inspectContainer ${ID_X}`, `inspectContainer ${ID_A.slice(0, 12)}`],
      'the rest goes to Docker',
    );
  });

  it('applies events: a new container appears, a destroyed one goes, others are ignored', async () => {
    const docker = fakeDocker();
    const s = await started(docker);
    docker.containers.set(ID_B, doc(ID_B, CONTAINER));
    docker.emit('create', ID_B, CONTAINER);
    docker.emit('start', ID_X, { other: 'x' });
    await waitFor('B to be listed', async () => (await containerIds(s)).length === 1);
    assert.ok(!docker.callLines().includes(`inspectContainer ${ID_X}`), 'no inspect for a container that is not the shim’s');
    docker.containers.delete(ID_B);
    docker.emit('destroy', ID_B, CONTAINER);
    await waitFor('B to be gone', async () => (await containerIds(s)).length === 0);
  });

  it('applies the events of a poll turn once that turn is over, in the order they came', async () => {
    const docker = fakeDocker(doc(ID_A, CONTAINER), doc(ID_B, CONTAINER));
    await started(docker);
    docker.calls.length = 0;
    docker.emit('die', ID_A, CONTAINER);
    docker.emit('die', ID_B, CONTAINER);
    // Every microtask of the turn that read them (the stream's yields) has run: the answer of
    // a call read in that turn would go out now, before any refresh of the cache's.
    for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => process.nextTick(resolve));
    assert.deepEqual(docker.callLines(), [], 'nothing applied within the turn');
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.deepEqual(docker.callLines(), [`inspectContainer ${ID_A}`, `inspectContainer ${ID_B}`], 'both applied after it, in order');
  });

  it('remembers an oom event for the container’s run', async () => {
    const docker = fakeDocker(doc(ID_A, CONTAINER));
    const s = await started(docker);
    const startedAt = docker.containers.get(ID_A)!.State.StartedAt;
    assert.equal(s.cache.containers.oomKilledIn(ID_A, startedAt), false);
    docker.emit('die', ID_A, CONTAINER);
    docker.emit('oom', ID_A, CONTAINER);
    await waitFor('the report to be taken up', () => s.cache.containers.oomKilledIn(ID_A, startedAt));
  });

  it('goes to Docker as soon as the stream is lost, and resyncs on reconnecting', async () => {
    const docker = fakeDocker(doc(ID_A, CONTAINER));
    const s = await started(docker);
    const down = goUnreachable(docker);
    docker.endStreams(new DockerUnreachableError('connection reset'));
    await waitFor('the cache to notice', () => !s.cache.synced);
    await assert.rejects(containerIds(s), DockerUnreachableError);
    await assert.rejects(s.client.inspectContainer(ID_A), DockerUnreachableError);

    // Missed while away: A removed, B created.
    docker.containers.delete(ID_A);
    docker.containers.set(ID_B, doc(ID_B, CONTAINER));
    down.clear();
    await waitFor('a resync', () => s.cache.synced);
    assert.ok(docker.subscriptions >= 2);
    docker.calls.length = 0;
    assert.deepEqual(await containerIds(s), [ID_B]);
    assert.ok(!docker.methods().includes('listContainers'), 'answered from the resynced cache');
  });

  it('stops answering when a re-inspect fails, since it cannot vouch for that container', async () => {
    const docker = fakeDocker(doc(ID_A, CONTAINER));
    const s = await started(docker);
    const slow = docker.hold('inspectContainer', (id) => id === ID_A);
    docker.calls.length = 0;
    docker.emit('die', ID_A, CONTAINER);
    await waitFor('the re-inspect to start', () => docker.callLines().includes(`inspectContainer ${ID_A}`));
    goUnreachable(docker);
    slow.release();
    await waitFor('the cache to give up', () => !s.cache.synced);
  });

  it('refreshes after a mutating call before returning, even one that names a container by prefix', async () => {
    const docker = fakeDocker(doc(ID_A, CONTAINER));
    const s = await started(docker);
    docker.calls.length = 0;
    await s.client.removeContainer(ID_A.slice(0, 10), { force: true, removeVolumes: true });
    assert.deepEqual(await containerIds(s), [], 'no event needed');
    assert.deepEqual(docker.argsOf('removeContainer'), [[ID_A.slice(0, 10), { force: true, removeVolumes: true }]]);
    assert.equal(docker.containers.size, 0);
  });
});

describe('container store', () => {
  it('applies changes to one container one at a time, in the order asked, so the newest wins', async () => {
    const docker = fakeDocker(doc(ID_A, CONTAINER, true));
    const store = new ContainerDocuments(docker);
    const slow = docker.hold('inspectContainer', (id) => id === ID_A);
    const first = store.refresh(ID_A); // sees "running", but is slow
    await waitFor('the first inspect', () => docker.calls.length === 1);
    docker.containers.set(ID_A, doc(ID_A, CONTAINER, false));
    const second = store.refresh(ID_A); // must not overtake it
    assert.equal(docker.calls.length, 1, 'the second inspect waits for the first');
    assert.equal(store.isKnown(ID_A), true, 'a container with a change under way counts as known');
    slow.release();
    await Promise.all([first, second]);
    assert.equal(store.get(ID_A)?.State.Running, false);
  });

  it('lets refreshes asked for while one waits to start share it (one change, several events)', async () => {
    const docker = fakeDocker(doc(ID_A, CONTAINER, true));
    const store = new ContainerDocuments(docker);
    const slow = docker.hold('inspectContainer', (id) => id === ID_A);
    const running = store.refresh(ID_A); // under way, its answer held back
    await waitFor('the first inspect', () => docker.calls.length === 1);
    docker.containers.set(ID_A, doc(ID_A, CONTAINER, false));
    // kill, die and stop arrive while the first inspect is still out
    const afterKill = store.refresh(ID_A);
    const afterDie = store.refresh(ID_A);
    const afterStop = store.refresh(ID_A);
    slow.release();
    await Promise.all([running, afterKill, afterDie, afterStop]);
    assert.equal(docker.argsOf('inspectContainer').length, 2, 'one inspect under way, one shared by the three waiting');
    assert.equal(store.get(ID_A)?.State.Running, false, 'the shared inspect ran after the change');
    await store.refresh(ID_A);
    assert.equal(docker.argsOf('inspectContainer').length, 3, 'a request after all settled inspects again');
  });

  it('remembers an OOM kill for the run the report came in, and forgets it with the container', async () => {
    const docker = fakeDocker(doc(ID_A, CONTAINER, true));
    const store = new ContainerDocuments(docker);
    const slow = docker.hold('inspectContainer', (id) => id === ID_A);
    const running = store.refresh(ID_A); // under way when the report comes
    await waitFor('the first inspect', () => docker.calls.length === 1);
    const exited = doc(ID_A, CONTAINER, false);
    docker.containers.set(ID_A, exited);
    const afterDie = store.refresh(ID_A);
    const afterOom = store.refresh(ID_A, { oomKilled: true }); // shares the waiting refresh
    slow.release();
    await Promise.all([running, afterDie, afterOom]);
    assert.equal(store.oomKilledIn(ID_A, exited.State.StartedAt), true, 'the run the report came in');
    assert.equal(store.oomKilledIn(ID_A, '2026-11-22T03:00:00Z'), false, 'not another run');
    assert.equal(store.oomKilledIn(ID_B, exited.State.StartedAt), false, 'not another container');

    const restarted = doc(ID_A, CONTAINER, true);
    docker.containers.set(ID_A, { ...restarted, State: { ...restarted.State, ...runningState('2026-11-22T03:00:00Z') } });
    await store.refresh(ID_A);
    assert.equal(store.oomKilledIn(ID_A, '2026-11-22T03:00:00Z'), false, 'a plain refresh reports nothing');
    await store.forget(ID_A);
    assert.equal(store.oomKilledIn(ID_A, exited.State.StartedAt), false, 'forgotten with the container');
  });

  it('drops a container that is gone or not the shim’s', async () => {
    const docker = fakeDocker(doc(ID_A, CONTAINER));
    const store = new ContainerDocuments(docker);
    await store.refresh(ID_A);
    assert.ok(store.get(ID_A));
    docker.containers.delete(ID_A);
    await store.refresh(ID_A);
    assert.equal(store.get(ID_A), undefined);
    docker.containers.set(ID_X, doc(ID_X, {}));
    await store.refresh(ID_X);
    assert.equal(store.size, 0);
  });
});

