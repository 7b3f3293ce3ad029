// The state cache and the caching client against a scripted Docker: when reads come from the
// cache and when they go to Docker, what events do, what a lost stream or a failed re-inspect
// does, and that changes to one container are applied in order.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { DockerClient, EventsOptions } from '../../src/docker/client';
import type { ContainerInspect, ContainerSummary, DockerEvent, DockerFilters, ImageInspect } from '../../src/docker/types';
import { DockerNotFoundError, DockerUnreachableError } from '../../src/errors';
import { CachingDockerClient } from '../../src/docker-cache/caching-client';
import { ContainerStore } from '../../src/docker-cache/container-store';
import { DockerStateCache } from '../../src/docker-cache/state-cache';
import { silentLogger } from '../../src/util/logger';
import { waitFor } from '../support/poll';

const TYPE = 'io.kubernetes.docker.type';
const ID_A = 'a'.repeat(64);
const ID_B = 'b'.repeat(64);
const ID_X = 'e'.repeat(64);

function doc(id: string, labels: Record<string, string>, running = true): ContainerInspect {
  return {
    Id: id,
    Name: `/k8s_c_${id.slice(0, 4)}_ns_uid_0`,
    Created: '2026-11-22T02:33:51.889293387Z',
    Path: 'sleep',
    Args: ['60'],
    Image: 'sha256:1111',
    State: { Status: running ? 'running' : 'exited', Running: running, Paused: false, Restarting: false, OOMKilled: false, Dead: false, Pid: running ? 42 : 0, ExitCode: 0, Error: '', StartedAt: '2026-11-22T02:33:52Z', FinishedAt: '0001-01-01T00:00:00Z' },
    Config: { Image: 'busybox', Labels: labels },
    HostConfig: { NetworkMode: 'default' },
    NetworkSettings: { Ports: {}, Networks: {} },
    Mounts: [],
  } as unknown as ContainerInspect;
}

/** A Docker whose containers, event stream and failures the test controls. */
class ScriptedDocker implements Partial<DockerClient> {
  readonly endpoint = 'scripted';
  readonly containers = new Map<string, ContainerInspect>();
  readonly calls: string[] = [];
  unreachable = false;
  /** When set, inspect of that ID waits for the gate. */
  gate: { id: string; open: Promise<void> } | undefined;
  private stream: { push(ev: DockerEvent): void; end(err?: Error): void } | undefined;
  subscriptions = 0;

  private check(): void {
    if (this.unreachable) throw new DockerUnreachableError('cannot reach Docker');
  }

  async listContainers(query: { all: boolean; filters?: DockerFilters }): Promise<ContainerSummary[]> {
    this.calls.push(`list ${JSON.stringify(query.filters ?? {})}`);
    this.check();
    const [term] = query.filters?.label ?? [];
    return [...this.containers.values()]
      .filter((c) => term === undefined || c.Config.Labels[term.split('=')[0]!] !== undefined)
      .map((c) => ({ Id: c.Id }) as ContainerSummary);
  }

  async inspectContainer(id: string): Promise<ContainerInspect> {
    this.calls.push(`inspect ${id}`);
    const snapshot = this.containers.get(id);
    if (this.gate?.id === id) await this.gate.open;
    this.check();
    if (!snapshot) throw new DockerNotFoundError(`No such container: ${id}`);
    return structuredClone(snapshot);
  }

  async inspectImage(ref: string): Promise<ImageInspect> {
    this.calls.push(`inspect image ${ref}`);
    this.check();
    if (ref === 'busybox') return { Id: 'sha256:1111' } as ImageInspect;
    throw new DockerNotFoundError(`No such image: ${ref}`);
  }

  async removeContainer(id: string): Promise<void> {
    this.calls.push(`remove ${id}`);
    for (const full of this.containers.keys()) if (full.startsWith(id)) this.containers.delete(full);
  }

  events(_query: object, opts?: EventsOptions): AsyncIterable<DockerEvent> {
    const queue: DockerEvent[] = [];
    let wake: (() => void) | undefined;
    let ended: { err?: Error } | undefined;
    const self = this;
    this.stream = {
      push: (ev) => (queue.push(ev), wake?.()),
      end: (err) => ((ended = { err }), wake?.()),
    };
    return (async function* () {
      self.check();
      self.subscriptions++;
      opts?.onSubscribed?.();
      const onAbort = (): void => ((ended = {}), wake?.());
      opts?.signal?.addEventListener('abort', onAbort, { once: true });
      for (;;) {
        while (queue.length > 0) yield queue.shift()!;
        if (ended) {
          if (ended.err) throw ended.err;
          return;
        }
        await new Promise<void>((r) => (wake = r));
      }
    })();
  }

  emit(action: string, id: string, labels: Record<string, string> = { [TYPE]: 'container' }): void {
    this.stream?.push({ Type: 'container', Action: action, Actor: { ID: id, Attributes: labels }, time: 0, timeNano: 0 });
  }

  cutStream(): void {
    this.stream?.end(new DockerUnreachableError('connection reset'));
  }
}

function setUp(docker: ScriptedDocker): { cache: DockerStateCache; client: CachingDockerClient } {
  const raw = docker as unknown as DockerClient;
  const cache = new DockerStateCache(raw, silentLogger(), { initialMs: 5, maxMs: 20, subscribeTimeoutMs: 1_000 });
  return { cache, client: new CachingDockerClient(raw, cache) };
}

const SHIM_LIST = { all: true, filters: { label: [`${TYPE}=container`] } };

describe('state cache with a scripted Docker', () => {
  let cache: DockerStateCache | undefined;
  afterEach(async () => {
    await cache?.stop();
    cache = undefined;
  });

  it('holds only the shim’s containers and answers shim queries without Docker', async () => {
    const docker = new ScriptedDocker();
    docker.containers.set(ID_A, doc(ID_A, { [TYPE]: 'container' }));
    docker.containers.set(ID_X, doc(ID_X, { other: 'x' }));
    const s = setUp(docker);
    cache = s.cache;
    await s.cache.start();
    assert.equal(s.cache.synced, true);
    assert.equal(s.cache.containers.size, 1);

    docker.calls.length = 0;
    assert.deepEqual((await s.client.listContainers(SHIM_LIST)).map((c) => c.Id), [ID_A]);
    assert.equal((await s.client.inspectContainer(ID_A)).Id, ID_A);
    assert.deepEqual(docker.calls, ['inspect image busybox'], 'only the image name behind the Image column, once');
    await s.client.listContainers(SHIM_LIST);
    assert.equal(docker.calls.length, 1);

    await s.client.listContainers({ all: true });
    await s.client.inspectContainer(ID_X);
    await s.client.inspectContainer(ID_A.slice(0, 12)).catch(() => undefined); // the scripted Docker knows full IDs only
    assert.deepEqual(docker.calls.slice(1), ['list {}', `inspect ${ID_X}`, `inspect ${ID_A.slice(0, 12)}`], 'the rest goes to Docker');
  });

  it('applies events: a new container appears, a destroyed one goes, others are ignored', async () => {
    const docker = new ScriptedDocker();
    const s = setUp(docker);
    cache = s.cache;
    await s.cache.start();
    docker.containers.set(ID_B, doc(ID_B, { [TYPE]: 'container' }));
    docker.emit('create', ID_B);
    docker.emit('start', ID_X, { other: 'x' });
    await waitFor('B to be listed', async () => (await s.client.listContainers(SHIM_LIST)).length === 1);
    assert.ok(!docker.calls.includes(`inspect ${ID_X}`), 'no inspect for a container that is not the shim’s');
    docker.containers.delete(ID_B);
    docker.emit('destroy', ID_B);
    await waitFor('B to be gone', async () => (await s.client.listContainers(SHIM_LIST)).length === 0);
  });

  it('goes to Docker as soon as the stream is lost, and resyncs on reconnecting', async () => {
    const docker = new ScriptedDocker();
    docker.containers.set(ID_A, doc(ID_A, { [TYPE]: 'container' }));
    const s = setUp(docker);
    cache = s.cache;
    await s.cache.start();
    docker.unreachable = true;
    docker.cutStream();
    await waitFor('the cache to notice', () => !s.cache.synced);
    await assert.rejects(s.client.listContainers(SHIM_LIST), DockerUnreachableError);
    await assert.rejects(s.client.inspectContainer(ID_A), DockerUnreachableError);

    // Missed while away: A removed, B created.
    docker.containers.delete(ID_A);
    docker.containers.set(ID_B, doc(ID_B, { [TYPE]: 'container' }));
    docker.unreachable = false;
    await waitFor('a resync', () => s.cache.synced);
    assert.ok(docker.subscriptions >= 2);
    docker.calls.length = 0;
    assert.deepEqual((await s.client.listContainers(SHIM_LIST)).map((c) => c.Id), [ID_B]);
    assert.ok(!docker.calls.some((c) => c.startsWith('list')), 'answered from the resynced cache');
  });

  it('stops answering when a re-inspect fails, since it cannot vouch for that container', async () => {
    const docker = new ScriptedDocker();
    docker.containers.set(ID_A, doc(ID_A, { [TYPE]: 'container' }));
    const s = setUp(docker);
    cache = s.cache;
    await s.cache.start();
    let open: () => void = () => undefined;
    docker.gate = { id: ID_A, open: new Promise<void>((r) => (open = r)) };
    docker.emit('die', ID_A);
    await waitFor('the re-inspect to start', () => docker.calls.includes(`inspect ${ID_A}`));
    docker.unreachable = true;
    open();
    await waitFor('the cache to give up', () => !s.cache.synced);
  });

  it('refreshes after a mutating call before returning, even one that names a container by prefix', async () => {
    const docker = new ScriptedDocker();
    docker.containers.set(ID_A, doc(ID_A, { [TYPE]: 'container' }));
    const s = setUp(docker);
    cache = s.cache;
    await s.cache.start();
    await s.client.removeContainer(ID_A.slice(0, 10), { force: true, removeVolumes: true });
    assert.deepEqual(await s.client.listContainers(SHIM_LIST), [], 'no event needed');
  });
});

describe('container store', () => {
  it('applies changes to one container one at a time, in the order asked, so the newest wins', async () => {
    const docker = new ScriptedDocker();
    const store = new ContainerStore(docker as unknown as DockerClient);
    docker.containers.set(ID_A, doc(ID_A, { [TYPE]: 'container' }, true));
    let open: () => void = () => undefined;
    docker.gate = { id: ID_A, open: new Promise<void>((r) => (open = r)) };
    const first = store.refresh(ID_A); // sees "running", but is slow
    await waitFor('the first inspect', () => docker.calls.length === 1);
    docker.containers.set(ID_A, doc(ID_A, { [TYPE]: 'container' }, false));
    const second = store.refresh(ID_A); // must not overtake it
    assert.equal(docker.calls.length, 1, 'the second inspect waits for the first');
    assert.equal(store.isKnown(ID_A), true, 'a container with a change under way counts as known');
    docker.gate = undefined;
    open();
    await Promise.all([first, second]);
    assert.equal(store.get(ID_A)?.State.Running, false);
  });

  it('lets refreshes asked for while one waits to start share it (one change, several events)', async () => {
    const docker = new ScriptedDocker();
    const store = new ContainerStore(docker as unknown as DockerClient);
    docker.containers.set(ID_A, doc(ID_A, { [TYPE]: 'container' }, true));
    let open: () => void = () => undefined;
    docker.gate = { id: ID_A, open: new Promise<void>((r) => (open = r)) };
    const running = store.refresh(ID_A); // under way, held at the gate
    await waitFor('the first inspect', () => docker.calls.length === 1);
    docker.containers.set(ID_A, doc(ID_A, { [TYPE]: 'container' }, false));
    // kill, die and stop arrive while the first inspect is still out
    const afterKill = store.refresh(ID_A);
    const afterDie = store.refresh(ID_A);
    const afterStop = store.refresh(ID_A);
    docker.gate = undefined;
    open();
    await Promise.all([running, afterKill, afterDie, afterStop]);
    assert.equal(docker.calls.filter((c) => c.startsWith('inspect')).length, 2, 'one inspect under way, one shared by the three waiting');
    assert.equal(store.get(ID_A)?.State.Running, false, 'the shared inspect ran after the change');
    await store.refresh(ID_A);
    assert.equal(docker.calls.filter((c) => c.startsWith('inspect')).length, 3, 'a request after all settled inspects again');
  });

  it('drops a container that is gone or not the shim’s', async () => {
    const docker = new ScriptedDocker();
    const store = new ContainerStore(docker as unknown as DockerClient);
    docker.containers.set(ID_A, doc(ID_A, { [TYPE]: 'container' }));
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

