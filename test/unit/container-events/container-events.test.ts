// GetContainerEvents without Docker: which events a change of a container's inspect document
// stands for, which pod it belongs to, what the hub does for several listeners, slow listeners
// and a lost Docker, and that the container store reports each change once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerInspect } from '../../../src/docker/types';
import { ResourceExhaustedError, UnavailableError } from '../../../src/errors';
import { EventClock, snapshotOf } from '../../../src/container-events/builder';
import { EventHub, type ChangeSource } from '../../../src/container-events/hub';
import { eventTypesFor, podIdOf } from '../../../src/container-events/transitions';
import { ContainerDocuments, type ContainerChange } from '../../../src/docker-cache/container-documents';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker } from '../../support/fake-docker';
import { CREATED, inspectDoc, type DockerState } from '../../support/fixtures/docker-container';

const POD = 'a'.repeat(64);
const CTR = 'b'.repeat(64);
const OTHER_POD = 'c'.repeat(64);
const OTHER_CTR = 'd'.repeat(64);

function doc(id: string, labels: Record<string, string>, state: Partial<DockerState>, created = CREATED): ContainerInspect {
  return inspectDoc({ Id: id, Created: created, State: state, Config: { Labels: labels } });
}

const sandboxLabels = { 'io.kubernetes.docker.type': 'podsandbox' };
const containerLabels = (pod: string): Record<string, string> => ({ 'io.kubernetes.docker.type': 'container', 'io.kubernetes.sandbox.id': pod });

const created = (id = CTR): ContainerInspect => doc(id, containerLabels(POD), { Status: 'created' });
const running = (startedAt = '2026-11-22T02:33:52.1Z', id = CTR): ContainerInspect =>
  doc(id, containerLabels(POD), { Status: 'running', Running: true, Pid: 42, StartedAt: startedAt });
const exited = (startedAt = '2026-11-22T02:33:52.1Z', id = CTR): ContainerInspect =>
  doc(id, containerLabels(POD), { Status: 'exited', ExitCode: 1, StartedAt: startedAt, FinishedAt: '2026-11-22T02:34:00Z' });

describe('eventTypesFor (Docker state before/after -> CRI events)', () => {
  it('a new container: created; started and stopped too when it already got that far', () => {
    assert.deepEqual(eventTypesFor(undefined, created()), ['CONTAINER_CREATED_EVENT']);
    assert.deepEqual(eventTypesFor(undefined, running()), ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT']);
    assert.deepEqual(eventTypesFor(undefined, exited()), ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT']);
  });

  it('start, stop, and a stop seen together with the start', () => {
    assert.deepEqual(eventTypesFor(created(), running()), ['CONTAINER_STARTED_EVENT']);
    assert.deepEqual(eventTypesFor(running(), exited()), ['CONTAINER_STOPPED_EVENT']);
    assert.deepEqual(eventTypesFor(created(), exited()), ['CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT']);
  });

  it('a restart (new StartedAt) is a stop and a start, even when both sides are running', () => {
    assert.deepEqual(eventTypesFor(running('2026-11-22T02:33:52.1Z'), running('2026-11-22T02:40:00.5Z')), ['CONTAINER_STOPPED_EVENT', 'CONTAINER_STARTED_EVENT']);
    assert.deepEqual(eventTypesFor(exited('2026-11-22T02:33:52.1Z'), running('2026-11-22T02:40:00.5Z')), ['CONTAINER_STARTED_EVENT']);
    assert.deepEqual(eventTypesFor(exited('2026-11-22T02:33:52.1Z'), exited('2026-11-22T02:40:00.5Z')), ['CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT']);
  });

  it('a start that failed (still "created", with an error) is a stop', () => {
    const failed = doc(CTR, containerLabels(POD), { Status: 'created', Error: 'exec: "nope": not found', ExitCode: 127 });
    assert.deepEqual(eventTypesFor(created(), failed), ['CONTAINER_STOPPED_EVENT']);
    assert.deepEqual(eventTypesFor(undefined, failed), ['CONTAINER_CREATED_EVENT', 'CONTAINER_STOPPED_EVENT']);
  });

  it('nothing for a re-inspect that changed nothing CRI shows, or a pause', () => {
    assert.deepEqual(eventTypesFor(running(), running()), []);
    assert.deepEqual(eventTypesFor(exited(), exited()), []);
    assert.deepEqual(eventTypesFor(created(), created()), []);
    const paused = doc(CTR, containerLabels(POD), { Status: 'paused', Running: true, Paused: true, StartedAt: '2026-11-22T02:33:52.1Z' });
    assert.deepEqual(eventTypesFor(running(), paused), []);
    assert.deepEqual(eventTypesFor(undefined, undefined), []);
  });

  it('removal: deleted; a running container removed by force stopped first', () => {
    assert.deepEqual(eventTypesFor(exited(), undefined), ['CONTAINER_DELETED_EVENT']);
    assert.deepEqual(eventTypesFor(created(), undefined), ['CONTAINER_DELETED_EVENT']);
    assert.deepEqual(eventTypesFor(running(), undefined), ['CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']);
  });
});

describe('podIdOf', () => {
  it('a sandbox is its own pod; a container names its pod; anything else has none', () => {
    assert.equal(podIdOf(doc(POD, sandboxLabels, {})), POD);
    assert.equal(podIdOf(created()), POD);
    assert.equal(podIdOf(doc(CTR, { 'io.kubernetes.docker.type': 'container' }, {})), undefined);
    assert.equal(podIdOf(doc(CTR, {}, {})), undefined);
  });
});

function held(...docs: ContainerInspect[]): { get(id: string): ContainerInspect | undefined; values(): IterableIterator<ContainerInspect> } {
  const m = new Map(docs.map((d) => [d.Id, d]));
  return { get: (id) => m.get(id), values: () => m.values() };
}

describe('snapshotOf (the pod right after a change)', () => {
  const sandbox = doc(POD, sandboxLabels, { Status: 'running', Running: true, StartedAt: '2026-11-22T02:33:50Z' });
  const second = running('2026-11-22T02:35:00Z', 'e'.repeat(64));
  second.Created = '2026-11-22T02:34:59Z';
  const elsewhere = doc(OTHER_CTR, containerLabels(OTHER_POD), { Status: 'running', Running: true });

  it("a container's change carries its pod's sandbox and only that pod's containers, oldest first", () => {
    const snap = snapshotOf({ id: CTR, before: created(), after: running() }, held(sandbox, second, running(), elsewhere));
    assert.ok(snap);
    assert.equal(snap.containerId, CTR);
    assert.equal(snap.podId, POD);
    assert.deepEqual(snap.types, ['CONTAINER_STARTED_EVENT']);
    assert.equal(snap.sandbox, sandbox);
    assert.equal(snap.sandboxRemoved, false);
    assert.deepEqual(snap.containers.map((c) => c.Id), [CTR, second.Id]);
  });

  it('orders containers created at the same time by ID, without ICU (localeCompare)', (t) => {
    // A collator loads ICU's collation data: ~3 MiB of RSS for the rest of the process's life.
    t.mock.method(String.prototype, 'localeCompare', () => {
      throw new Error('localeCompare called');
    });
    const twin = running('2026-11-22T02:33:52.1Z', '0'.repeat(64));
    const snap = snapshotOf({ id: CTR, before: created(), after: running() }, held(sandbox, running(), twin));
    assert.deepEqual(snap?.containers.map((c) => c.Id), [twin.Id, CTR]);
  });

  it('a removed container is no longer among the statuses', () => {
    const snap = snapshotOf({ id: CTR, before: exited(), after: undefined }, held(sandbox, second));
    assert.ok(snap);
    assert.deepEqual(snap.types, ['CONTAINER_DELETED_EVENT']);
    assert.deepEqual(snap.containers.map((c) => c.Id), [second.Id]);
  });

  it("a removed sandbox's event keeps its last document, marked removed", () => {
    const snap = snapshotOf({ id: POD, before: sandbox, after: undefined }, held());
    assert.ok(snap);
    assert.equal(snap.sandbox, sandbox);
    assert.equal(snap.sandboxRemoved, true);
    assert.deepEqual(snap.types, ['CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']);
  });

  it('nothing for a change with no event, or a container of no pod', () => {
    assert.equal(snapshotOf({ id: CTR, before: running(), after: running() }, held(sandbox)), undefined);
    assert.equal(snapshotOf({ id: CTR, before: undefined, after: doc(CTR, {}, {}) }, held()), undefined);
  });
});

describe('EventClock', () => {
  it('never repeats or goes back, however fast it is asked', () => {
    const clock = new EventClock();
    const times = Array.from({ length: 1000 }, () => BigInt(clock.now()));
    for (let i = 1; i < times.length; i++) assert.ok(times[i]! > times[i - 1]!, `time ${i} not after time ${i - 1}`);
  });
});

/** A change source the test drives, like a watch of the state cache. */
class FakeSource implements ChangeSource<string> {
  synced = true;
  watcher: { containerChanged(change: string): void; unsynced(reason: string): void } | undefined;
  watches = 0;

  listen(w: { containerChanged(change: string): void; unsynced(reason: string): void }): () => void {
    if (!this.synced) throw new Error('state cache is not synced with Docker');
    this.watches++;
    this.watcher = w;
    return () => {
      if (this.watcher === w) this.watcher = undefined;
    };
  }

  emit(change: string): void {
    this.watcher?.containerChanged(change);
  }

  lose(reason: string): void {
    const w = this.watcher;
    this.watcher = undefined;
    w?.unsynced(reason);
  }
}

/** Each change "x" becomes the messages "x:1", "x:2"; "skip" none; "fail" a failed build. */
function hubOver(source: FakeSource, queueLimit = 100): EventHub<string, string> {
  return new EventHub<string, string>(
    source,
    (change) => {
      if (change === 'skip') return undefined;
      return async () => {
        if (change === 'fail') throw new Error('Docker went away');
        return [`${change}:1`, `${change}:2`];
      };
    },
    silentLogger(),
    { queueLimit },
  );
}

async function take(listener: { next(signal: AbortSignal): Promise<string | undefined> }, n: number): Promise<string[]> {
  const out: string[] = [];
  const signal = new AbortController().signal;
  for (let i = 0; i < n; i++) out.push((await listener.next(signal))!);
  return out;
}

describe('EventHub', () => {
  it('every listener gets every message, in order', async () => {
    const source = new FakeSource();
    const hub = hubOver(source);
    const a = hub.listen();
    const b = hub.listen();
    assert.equal(source.watches, 1, 'one watch for all listeners');
    source.emit('x');
    source.emit('skip');
    source.emit('y');
    assert.deepEqual(await take(a, 4), ['x:1', 'x:2', 'y:1', 'y:2']);
    assert.deepEqual(await take(b, 4), ['x:1', 'x:2', 'y:1', 'y:2']);
  });

  it('a listener hears only of changes made after it began listening', async () => {
    const source = new FakeSource();
    const hub = hubOver(source);
    const a = hub.listen();
    source.emit('early');
    const b = hub.listen();
    source.emit('late');
    assert.deepEqual(await take(a, 4), ['early:1', 'early:2', 'late:1', 'late:2']);
    assert.deepEqual(await take(b, 2), ['late:1', 'late:2']);
  });

  it('a listener that falls behind is dropped with RESOURCE_EXHAUSTED; the others go on', async () => {
    const source = new FakeSource();
    const hub = hubOver(source, 5);
    const slow = hub.listen();
    const quick = hub.listen();
    const seen: string[] = [];
    for (const change of ['a', 'b', 'c', 'd']) {
      source.emit(change);
      seen.push(...(await take(quick, 2)));
    }
    assert.deepEqual(seen, ['a:1', 'a:2', 'b:1', 'b:2', 'c:1', 'c:2', 'd:1', 'd:2']);
    await assert.rejects(slow.next(new AbortController().signal), (err: unknown) => err instanceof ResourceExhaustedError && /fell 5 events behind/.test(err.message));
    assert.equal(slow.queued, 0, "a dropped listener's queue is freed");
    assert.equal(hub.listenerCount, 1);
  });

  it('Docker lost: every listener ends with UNAVAILABLE, and listening is refused until it is back', async () => {
    const source = new FakeSource();
    const hub = hubOver(source);
    const a = hub.listen();
    const b = hub.listen();
    const waiting = a.next(new AbortController().signal);
    source.synced = false;
    source.lose('Docker closed the event stream');
    await assert.rejects(waiting, (err: unknown) => err instanceof UnavailableError && /lost track of Docker/.test(err.message));
    await assert.rejects(b.next(new AbortController().signal), UnavailableError);
    assert.throws(() => hub.listen(), (err: unknown) => err instanceof UnavailableError && /not synced/.test(err.message));
    source.synced = true;
    const c = hub.listen();
    source.emit('z');
    assert.deepEqual(await take(c, 2), ['z:1', 'z:2']);
  });

  it('an event that cannot be built ends the streams with UNAVAILABLE rather than skipping it', async () => {
    const source = new FakeSource();
    const hub = hubOver(source);
    const a = hub.listen();
    source.emit('fail');
    await assert.rejects(a.next(new AbortController().signal), (err: unknown) => err instanceof UnavailableError && /Docker went away/.test(err.message));
  });

  it('close: every stream ends with UNAVAILABLE and no new one is accepted', async () => {
    const source = new FakeSource();
    const hub = hubOver(source);
    const a = hub.listen();
    hub.close('the shim is shutting down');
    await assert.rejects(a.next(new AbortController().signal), (err: unknown) => err instanceof UnavailableError && /shutting down/.test(err.message));
    assert.throws(() => hub.listen(), (err: unknown) => err instanceof UnavailableError && /shutting down/.test(err.message));
    assert.equal(source.watcher, undefined);
  });

  it('stops watching when the last listener leaves; a cancelled wait answers undefined', async () => {
    const source = new FakeSource();
    const hub = hubOver(source);
    const a = hub.listen();
    const cancel = new AbortController();
    const waiting = a.next(cancel.signal);
    cancel.abort();
    assert.equal(await waiting, undefined);
    a.close();
    assert.equal(source.watcher, undefined);
    assert.equal(hub.listenerCount, 0);
  });
});

describe('ContainerDocuments change reports', () => {
  it('each refresh and removal reports before and after once; a second removal reports nothing', async () => {
    const docker = new FakeDocker();
    docker.containers.set(CTR, created());
    const changes: ContainerChange[] = [];
    const store = new ContainerDocuments(docker, (c) => changes.push(c));
    await store.refresh(CTR);
    docker.containers.set(CTR, running());
    await store.refresh(CTR);
    await store.forget(CTR);
    await store.forget(CTR);
    docker.containers.delete(CTR);
    await store.refresh(CTR);
    assert.deepEqual(
      changes.map((c) => eventTypesFor(c.before, c.after)),
      [['CONTAINER_CREATED_EVENT'], ['CONTAINER_STARTED_EVENT'], ['CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT']],
    );
  });
});
