// The log followers a restarted shim resumes (src/logs/log-manager.ts): all in place at once,
// but only a few asking Docker at a time, so that hundreds of them do not hold the event loop
// (and kubelet's first answers) while they start. A follower over the state cache reads its
// container's documents from it, and finishes when the cache applies the end of its run.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { CachingDockerClient } from '../../../src/docker-cache/caching-client';
import { DockerStateCache } from '../../../src/docker-cache/state-cache';
import { FollowerRecordStore } from '../../../src/logs/follower-records';
import { openContainerLog } from '../../../src/logs/log-file';
import { ContainerLogManager } from '../../../src/logs/log-manager';
import { silentLogger } from '../../../src/util/logger';
import { Slots } from '../../../src/util/slots';
import { FakeDocker } from '../../support/fake-docker';
import { runningState } from '../../support/fixtures/docker-container';
import { exitedState } from '../../support/fixtures/shim-containers';
import { waitFor } from '../../support/poll';
import { tempDir } from '../../support/temp';

describe('resumed log followers', () => {
  it('are all in place at once, and ask Docker four at a time', async () => {
    const root = tempDir('log-manager');
    const docker = new FakeDocker();
    const store = new FollowerRecordStore(root);
    const ids = Array.from({ length: 10 }, (_, i) => String(i).repeat(64).slice(0, 64));
    for (const id of ids) {
      // The "none" driver: nothing to copy, so each follower ends once it has its answer.
      docker.addContainer({ Id: id, HostConfig: { LogConfig: { Type: 'none', Config: {} } } });
      store.save(id, { logPath: path.join(root, 'logs', `${id}.log`), tty: false, complete: false });
    }
    const held = docker.hold('inspectContainer');
    const manager = new ContainerLogManager(docker, silentLogger(), root);
    try {
      assert.equal(manager.resumeAll(), 10);
      const inspects = (): number => docker.argsOf('inspectContainer').length;
      await waitFor('the first four inspects', () => inspects() === 4);
      for (let i = 0; i < 20; i++) await nextTurn();
      assert.equal(inspects(), 4, 'the others wait for a slot');
      assert.equal(manager.resumeAll(), 0, 'every follower is in place already');
      held.release();
      await waitFor('every follower to have asked', () => inspects() === 10);
    } finally {
      await manager.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("a resumed follower whose record an older shim wrote", () => {
  it("leaves alone a file its path names when that path is the container's image's label, and follows one that is the container's own", async () => {
    const root = tempDir('log-manager');
    const docker = new FakeDocker();
    const store = new FollowerRecordStore(root);
    const planted = path.join(root, 'planted');
    fs.writeFileSync(planted, 'root:x:0:0:root:/root:/bin/sh\nlast line without a newline');
    const image = docker.addImage('hostile:1', { Config: { Labels: { 'io.kubernetes.container.logpath': planted } } } as never);
    const hostile = 'a'.repeat(64);
    const own = 'b'.repeat(64);
    const ownLog = path.join(root, 'own.log');
    const legacy = (id: string, logPath: string) =>
      docker.addContainer({
        Id: id,
        Name: `/k8s_app_web_default_uid_${id === hostile ? 0 : 1}`,
        Image: image.Id,
        HostConfig: { LogConfig: { Type: 'none', Config: {} } },
        Config: { Image: 'hostile:1', Labels: { 'io.kubernetes.docker.type': 'container', 'io.kubernetes.container.logpath': logPath } },
      });
    legacy(hostile, planted);
    legacy(own, ownLog);
    store.save(hostile, { logPath: planted, tty: false, complete: false });
    store.save(own, { logPath: ownLog, tty: false, complete: false });
    const manager = new ContainerLogManager(docker, silentLogger(), root);
    try {
      assert.equal(manager.resumeAll(), 2);
      await waitFor('both followers to finish', () => store.load(hostile)?.complete && store.load(own)?.complete);
      assert.equal(fs.readFileSync(planted, 'utf8'), 'root:x:0:0:root:/root:/bin/sh\nlast line without a newline');
      assert.equal(store.load(hostile)?.checked, undefined);
      assert.equal(store.load(own)?.checked, true);
      assert.equal(docker.argsOf('inspectContainer').length, 2, "the check's inspect is the follower's");
    } finally {
      await manager.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('a json-file follower over the state cache', () => {
  it('reads its container’s documents from the cache, asking Docker no inspect, and finishes once the cache applies the exit', async () => {
    const root = tempDir('log-manager');
    const dockerRoot = path.join(root, 'docker');
    const id = 'd'.repeat(64);
    const jsonLog = path.join(dockerRoot, 'containers', id, `${id}-json.log`);
    fs.mkdirSync(path.dirname(jsonLog), { recursive: true });
    fs.writeFileSync(jsonLog, `${JSON.stringify({ log: 'hello\n', stream: 'stdout', time: '2026-11-26T19:00:00.000000001Z' })}\n`);
    const docker = new FakeDocker();
    const doc = docker.addContainer({
      Id: id,
      State: runningState(),
      LogPath: jsonLog,
      HostConfig: { LogConfig: { Type: 'json-file', Config: {} } },
      Config: { Labels: { 'io.kubernetes.docker.type': 'container' } },
    });
    const cache = new DockerStateCache(docker, silentLogger(), { initialMs: 5, maxMs: 20, subscribeTimeoutMs: 1_000 });
    await cache.start();
    const manager = new ContainerLogManager(docker, silentLogger(), root, undefined, dockerRoot, new CachingDockerClient(docker, cache));
    cache.listen({ runEnded: (ended) => manager.runEnded(ended) });
    const store = new FollowerRecordStore(root);
    const logPath = path.join(root, 'pods', 'app.log');
    try {
      docker.calls.length = 0;
      await manager.follow(id, logPath, false, await openContainerLog(logPath));
      await waitFor('the line copied', () => fs.readFileSync(logPath, 'utf8').includes('stdout F hello'));
      assert.equal(manager.sources()['json-file'], 1);
      docker.containers.set(id, { ...doc, State: { ...doc.State, ...exitedState(0) } });
      docker.emit('die', id, { 'io.kubernetes.docker.type': 'container' });
      await waitFor('the follower finished', () => store.load(id)?.complete === true);
      assert.deepEqual(docker.argsOf('inspectContainer'), [[id]], 'the one inspect is the cache’s, after the die event');
    } finally {
      await manager.close();
      await cache.stop();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('Slots', () => {
  it('gives out at most its count, then one per release, in the order asked; a release counts once', async () => {
    const slots = new Slots(2);
    const a = await slots.acquire();
    const b = await slots.acquire();
    const order: string[] = [];
    const c = slots.acquire().then((release) => (order.push('c'), release));
    const d = slots.acquire().then((release) => (order.push('d'), release));
    await nextTurn();
    assert.deepEqual(order, []);
    a();
    a();
    await c;
    await nextTurn();
    assert.deepEqual(order, ['c'], 'a second release of the same slot frees nothing');
    b();
    (await d)();
    assert.deepEqual(order, ['c', 'd']);
  });

  it('lets a waiter whose signal aborts leave the queue holding nothing; the next release goes to the next waiter', async () => {
    const slots = new Slots(1);
    const held = await slots.acquire();
    const quitter = new AbortController();
    const gaveUp = slots.acquire(quitter.signal);
    const next = slots.acquire();
    assert.deepEqual([slots.inUse, slots.waiting], [1, 2]);
    quitter.abort(new Error('gave up'));
    await assert.rejects(gaveUp, /gave up/);
    assert.equal(slots.waiting, 1);
    held();
    (await next)();
    assert.deepEqual([slots.inUse, slots.waiting], [0, 0]);
    await assert.rejects(slots.acquire(AbortSignal.abort(new Error('already'))), /already/);
    assert.equal(slots.inUse, 0);
  });

  it('gives the next free slot to a waiter asking ahead before those waiting in line', async () => {
    const slots = new Slots(1);
    const held = await slots.acquire();
    const order: string[] = [];
    const inLine = slots.acquire().then((release) => (order.push('in line'), release));
    const ahead = slots.acquire(undefined, true).then((release) => (order.push('ahead'), release));
    held();
    (await ahead)();
    (await inLine)();
    assert.deepEqual(order, ['ahead', 'in line']);
  });
});

describe('a follower record’s removal', () => {
  it('leaves the main thread to the caller: the file goes in the thread pool, and a missing one is no error', async () => {
    const root = tempDir('follower-records');
    const store = new FollowerRecordStore(root);
    const id = 'c'.repeat(64);
    // Every thread of the pool waits in an open of a FIFO no one writes to, until released.
    const fifos = Array.from({ length: Number(process.env.UV_THREADPOOL_SIZE ?? 4) }, (_, i) => path.join(root, `fifo${i}`));
    let blocked: Promise<fs.promises.FileHandle[]> | undefined;
    const release = async (): Promise<void> => {
      if (!blocked) return;
      for (const f of fifos) fs.closeSync(fs.openSync(f, 'w'));
      for (const handle of await blocked) await handle.close();
      blocked = undefined;
    };
    try {
      store.save(id, { logPath: path.join(root, 'c.log'), tty: false, complete: true });
      assert.notEqual(store.load(id), undefined);
      for (const f of fifos) execFileSync('mkfifo', [f]);
      blocked = Promise.all(fifos.map((f) => fs.promises.open(f, 'r')));
      const removing = store.remove(id);
      // RemoveContainer asks for this beside Docker's removal, whose request goes out meanwhile.
      assert.notEqual(store.load(id), undefined, 'not removed on the caller’s thread');
      await release();
      await removing;
      assert.equal(store.load(id), undefined);
      await store.remove(id);
    } finally {
      await release();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
