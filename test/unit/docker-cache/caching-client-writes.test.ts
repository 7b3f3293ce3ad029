// The caching client's mutating calls against the fake Docker (test/support/fake-docker.ts):
// each answers as soon as Docker did, not after the cache's inspect of what it changed, and a
// read from the cache made after it (an inspect, or the object store's list) waits for that
// inspect, so it still reflects the change (past CATCH_UP_WAIT_MS, or with the cache unsynced
// meanwhile, the read goes to Docker); while one is
// being applied, the cache's version (what kept list answers are checked against) is undefined.
// A create, a start and a stop that Docker announces with an event (which it sends before its
// answer) cost one inspect, the one that event sets off, not a second of the call's own.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { ContainerInspect } from '../../../src/docker/types';
import { CachingDockerClient } from '../../../src/docker-cache/caching-client';
import { CATCH_UP_WAIT_MS, DockerStateCache, OWN_EVENT_WAIT_MS } from '../../../src/docker-cache/state-cache';
import { ShimObjectStore } from '../../../src/object-store/object-store';
import { DockerServerError } from '../../../src/errors';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker, type Hold } from '../../support/fake-docker';
import { waitFor } from '../../support/poll';
import { inspectDoc, runningState } from '../../support/fixtures/docker-container';

const TYPE = 'io.kubernetes.docker.type';
const CONTAINER = { [TYPE]: 'container' };
const ID_A = 'a'.repeat(64);
const NAME = 'k8s_c_pod_ns_uid_0';

function containerDoc(id: string, running: boolean): ContainerInspect {
  return inspectDoc({
    Id: id,
    Name: `/${NAME}`,
    State: running ? runningState() : { Status: 'created', Running: false },
    Config: { Labels: CONTAINER },
  });
}

/** Whether a promise has settled, as seen after the pending turns ran. */
function watch(p: Promise<unknown>): { readonly settled: boolean } {
  const seen = { settled: false };
  p.then(
    () => (seen.settled = true),
    () => (seen.settled = true),
  );
  return seen;
}

const turns = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const inspects = (docker: FakeDocker): number => docker.argsOf('inspectContainer').length;

describe('caching client: mutating calls', () => {
  let cache: DockerStateCache | undefined;
  /** Holds a test that failed midway left; released so that nothing waits on them. */
  const held: Hold[] = [];
  afterEach(async () => {
    for (const h of held.splice(0)) h.release();
    await cache?.stop();
    cache = undefined;
  });

  let objects: ShimObjectStore;
  /** The fake Docker of the last `started`. */
  let fake: FakeDocker;
  /** The caching client over `docker`, with the cache started; `objects` lists from that cache. */
  async function started(docker: FakeDocker): Promise<CachingDockerClient> {
    fake = docker;
    cache = new DockerStateCache(docker, silentLogger(), { initialMs: 5, maxMs: 20, subscribeTimeoutMs: 1_000 });
    await cache.start();
    docker.calls.length = 0;
    objects = new ShimObjectStore(docker, cache);
    return new CachingDockerClient(docker, cache);
  }
  const listed = (opts?: { signal: AbortSignal }) => objects.list({ kind: 'container' }, opts);

  function holdInspects(docker: FakeDocker): Hold {
    const hold = docker.hold('inspectContainer');
    held.push(hold);
    return hold;
  }

  /** A running container stopped while Docker holds back every inspect; the stop has answered. */
  async function stoppedWhileInspectsHeld(): Promise<CachingDockerClient> {
    const docker = new FakeDocker();
    docker.containers.set(ID_A, containerDoc(ID_A, true));
    const client = await started(docker);
    holdInspects(docker);
    const stopped = watch(client.stopContainer(ID_A, 10));
    await waitFor('the stop answered', () => stopped.settled, { timeoutMs: 2_000 });
    return client;
  }

  it('a create answers before any inspect; its event’s inspect is the only one, and a list after it waits for it', async () => {
    const docker = new FakeDocker();
    docker.addImage('busybox');
    const client = await started(docker);
    const before = cache!.version;
    assert.notEqual(before, undefined);
    const slowInspect = holdInspects(docker);
    const creating = client.createContainer({ name: NAME, Image: 'busybox', Labels: CONTAINER });
    const created = watch(creating);
    await waitFor('the create answered', () => created.settled, { timeoutMs: 2_000 });
    assert.equal(cache!.version, undefined, 'no list answer built before the change may be kept meanwhile');
    const listing = listed();
    const listWatch = watch(listing);
    docker.emit('create', await creating, { ...CONTAINER, name: NAME });
    await waitFor('the event’s inspect asked for', () => inspects(docker) === 1, { timeoutMs: 2_000 });
    await turns();
    assert.equal(listWatch.settled, false, 'the list waits for the inspect');
    slowInspect.release();
    assert.deepEqual((await listing).map((c) => c.name), [NAME]);
    assert.notEqual(cache!.version, undefined);
    assert.notEqual(cache!.version, before);
    assert.equal(inspects(docker), 1, 'one inspect for the call and its event');
  });

  it('a stop answers before any inspect; the die event’s inspect is the only one (kill and stop set off none), and an inspect after it sees the container stopped', async () => {
    const docker = new FakeDocker();
    docker.containers.set(ID_A, containerDoc(ID_A, true));
    const client = await started(docker);
    assert.equal((await client.inspectContainer(ID_A)).State.Running, true);
    const slowInspect = holdInspects(docker);
    const stopped = watch(client.stopContainer(ID_A, 10));
    await waitFor('the stop answered', () => stopped.settled, { timeoutMs: 2_000 });
    // Docker's order: the signal, the exit, then the stop.
    for (const action of ['kill', 'die', 'stop']) docker.emit(action, ID_A, { ...CONTAINER, name: NAME });
    const inspecting = client.inspectContainer(ID_A);
    await waitFor('the event’s inspect asked for', () => inspects(docker) === 1, { timeoutMs: 2_000 });
    slowInspect.release();
    assert.equal((await inspecting).State.Running, false);
    assert.equal(inspects(docker), 1, 'one inspect for the call and its event');
  });

  it('a start whose event had come before Docker’s answer takes that event’s inspect', async () => {
    const docker = new FakeDocker();
    docker.containers.set(ID_A, containerDoc(ID_A, false));
    const client = await started(docker);
    const slowStart = docker.hold('startContainer');
    held.push(slowStart);
    const starting = client.startContainer(ID_A);
    await waitFor('the start asked of Docker', () => docker.argsOf('startContainer').length === 1, { timeoutMs: 2_000 });
    docker.emit('start', ID_A, { ...CONTAINER, name: NAME });
    await waitFor('the event’s inspect done', async () => (await client.inspectContainer(ID_A)).State.Running, { timeoutMs: 2_000 });
    slowStart.release();
    await starting;
    assert.equal((await client.inspectContainer(ID_A)).State.Running, true);
    assert.equal(inspects(docker), 1);
  });

  it('inspects by itself when no event comes (Docker had nothing to announce), and at once after a failed call or a start of a running container', async () => {
    const docker = new FakeDocker();
    docker.containers.set(ID_A, containerDoc(ID_A, false));
    const client = await started(docker);
    const started_ = Date.now();
    await client.startContainer(ID_A);
    assert.equal((await client.inspectContainer(ID_A)).State.Running, true, 'the read after the call reflects it');
    assert.ok(Date.now() - started_ >= OWN_EVENT_WAIT_MS - 10, 'it waited for the event first');
    assert.equal(inspects(docker), 1);
    docker.fail('stopContainer', { error: new Error('Docker broke mid-stop') });
    await assert.rejects(client.stopContainer(ID_A, 10), /mid-stop/);
    await waitFor('the inspect after the failed stop', () => inspects(docker) === 2, { timeoutMs: OWN_EVENT_WAIT_MS / 2 });
    // A start of a container held as running: Docker announces nothing, so no wait either.
    await client.startContainer(ID_A);
    await waitFor('the inspect after a start Docker does not announce', () => inspects(docker) === 3, { timeoutMs: OWN_EVENT_WAIT_MS / 2 });
  });

  it('a remove answers without waiting for an inspect still queued before its forget', async () => {
    const docker = new FakeDocker();
    docker.containers.set(ID_A, containerDoc(ID_A, true));
    const client = await started(docker);
    // An event's refresh that Docker is slow to answer, queued for the container.
    const slowInspect = holdInspects(docker);
    docker.emit('die', ID_A, CONTAINER);
    await waitFor('the event’s inspect asked for', () => inspects(docker) === 1, { timeoutMs: 2_000 });
    const removed = watch(client.removeContainer(ID_A, { force: true, removeVolumes: true }));
    await waitFor('the remove answered while the inspect is held', () => removed.settled, { timeoutMs: 2_000 });
    const listing = listed();
    slowInspect.release();
    assert.deepEqual(await listing, [], 'the list after the remove waits for the forget');
  });

  it('a second stop while the first one’s refresh is under way judges the container refreshed: no wait for an event Docker will not send', async () => {
    const docker = new FakeDocker();
    docker.containers.set(ID_A, containerDoc(ID_A, true));
    const client = await started(docker);
    const slowInspect = holdInspects(docker);
    await client.stopContainer(ID_A, 10);
    docker.emit('die', ID_A, { ...CONTAINER, name: NAME });
    await waitFor('the event’s inspect asked for', () => inspects(docker) === 1, { timeoutMs: 2_000 });
    // Held, the container still reads running; once the refresh is applied it does not.
    const again = client.stopContainer(ID_A, 10);
    slowInspect.release();
    await again;
    await waitFor('the second stop’s own inspect, at once', () => inspects(docker) === 2, { timeoutMs: OWN_EVENT_WAIT_MS / 2 });
  });

  it('names what never changes of an object at once while the shim’s own changes are applied; its state still waits', async () => {
    await stoppedWhileInspectsHeld();
    const known = objects.identify('container', ID_A);
    assert.equal(known?.id, ID_A);
    assert.equal(known?.name, NAME);
    assert.equal(objects.identify('sandbox', ID_A), undefined, 'not a sandbox');
    assert.equal(objects.identify('container', ID_A.slice(0, 12)), undefined, 'a prefix is the list’s to resolve');
    assert.equal(objects.identify('container', 'b'.repeat(64)), undefined, 'not held');
    const listing = watch(listed());
    await turns();
    assert.equal(listing.settled, false, 'a list waits for the stop’s refresh');
  });

  it('a list waits at most CATCH_UP_WAIT_MS for a change Docker is slow to inspect, then asks Docker', async () => {
    await stoppedWhileInspectsHeld();
    const asked = Date.now();
    const list = await listed();
    const waitedMs = Date.now() - asked;
    assert.deepEqual(list.map((c) => c.status), ['exited'], 'Docker’s list, not the document held before the stop');
    assert.equal(fake.argsOf('listContainers').length, 1);
    assert.ok(waitedMs >= CATCH_UP_WAIT_MS - 10, `waited ${waitedMs} ms`);
  });

  it('an inspect waits at most CATCH_UP_WAIT_MS for a change Docker is slow to inspect, then asks Docker', async () => {
    const client = await stoppedWhileInspectsHeld();
    const inspecting = client.inspectContainer(ID_A);
    // The stop's own refresh (no die event comes) is the first, OWN_EVENT_WAIT_MS after it.
    await waitFor('the inspect asked of Docker', () => inspects(fake) === 2, { timeoutMs: CATCH_UP_WAIT_MS + 3_000 });
    for (const h of held.splice(0)) h.release();
    assert.equal((await inspecting).State.Running, false, 'Docker’s answer, not the document held before the stop');
  });

  it('a read whose wait ends with the cache unsynced (the refresh failed) asks Docker', async () => {
    const client = await stoppedWhileInspectsHeld();
    fake.fail('inspectContainer', { error: new DockerServerError('daemon busy', 500), times: 1 });
    const listing = listed();
    await turns();
    for (const h of held.splice(0)) h.release();
    assert.deepEqual((await listing).map((c) => c.status), ['exited'], 'Docker’s list, not the document held before the stop');
    // The resync the failure set off lists every container of the shim's; the store's list asks for its kind.
    const storeLists = fake.argsOf('listContainers').filter(([q]) => JSON.stringify(q).includes(`${TYPE}=container`));
    assert.equal(storeLists.length, 1, 'the list went to Docker');
    assert.equal((await client.inspectContainer(ID_A)).State.Running, false);
  });

  it('a read given up while it waits ends with its caller’s reason', async () => {
    await stoppedWhileInspectsHeld();
    const caller = new AbortController();
    const listing = listed({ signal: caller.signal });
    caller.abort(new Error('caller gone'));
    await assert.rejects(listing, /caller gone/);
  });
});
