// Kept list answers (src/shim/list-answers.ts): kept while the version stands, built afresh
// when it moves or is unknown, bounded in number, their encoding made once; and, over the real
// state cache and checkpoint cache on the fake Docker, that ListContainers and ListPodSandbox
// see every change the moment the cache has applied it.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { criContract } from '../../../../src/cri/contract';
import { CachingDockerClient } from '../../../../src/docker-cache/caching-client';
import { DockerStateCache } from '../../../../src/docker-cache/state-cache';
import { listContainers } from '../../../../src/shim/container/list-containers';
import { ListAnswers } from '../../../../src/shim/support/list-answers';
import { listPodSandbox } from '../../../../src/shim/sandbox/list-pod-sandbox';
import { silentLogger } from '../../../../src/util/logger';
import { callContext, fakeShimContext, type FakeShim } from '../../../support/fake-context';
import { sandboxCheckpoint } from '../../../support/fixtures/checkpoint';
import { addPauseContainer, addPodContainer, exitedState, idWithPrefix } from '../../../support/fixtures/shim-containers';
import { waitFor } from '../../../support/poll';

describe('ListAnswers', () => {
  it('gives the kept answer while the version stands, and builds afresh once it moves', async () => {
    let version = 1;
    let builds = 0;
    const answers = new ListAnswers(() => version);
    const build = async (): Promise<{ n: number }> => ({ n: ++builds });
    const first = await answers.answer('k', build);
    assert.equal(await answers.answer('k', build), first, 'the very same object');
    assert.notEqual(await answers.answer('other request', build), first, 'another request has its own');
    version = 2;
    const second = await answers.answer('k', build);
    assert.notEqual(second, first);
    assert.equal(second.n, 3);
    assert.equal(await answers.answer('k', build), second);
  });

  it('keeps nothing while the version is unknown (the cache is unsynced)', async () => {
    let builds = 0;
    const answers = new ListAnswers(() => undefined);
    const a = await answers.answer('k', async () => ({ n: ++builds }));
    const b = await answers.answer('k', async () => ({ n: ++builds }));
    assert.notEqual(a, b);
    assert.equal(answers.size, 0);
  });

  it('an answer built while the version moved is kept at the version it started from', async () => {
    let version = 1;
    const answers = new ListAnswers(() => version);
    const during = await answers.answer('k', async () => {
      version = 2; // a change applied while the answer was being built
      return { n: 1 };
    });
    const after = await answers.answer('k', async () => ({ n: 2 }));
    assert.notEqual(after, during, 'rebuilt: the first may have missed the change');
    assert.equal(after.n, 2);
  });

  it('drops the answers the version left behind, keeping those that still stand', async () => {
    let version: number | undefined = 1;
    const answers = new ListAnswers(() => version);
    await answers.answer('a', async () => ({ n: 1 }));
    answers.dropStale();
    assert.equal(answers.size, 1, 'the version stands');
    version = 2;
    const b = await answers.answer('b', async () => ({ n: 2 }));
    answers.dropStale();
    assert.equal(answers.size, 1, 'a was built at 1');
    assert.equal(await answers.answer('b', async () => ({ n: 3 })), b, 'b still given');
    version = undefined;
    answers.dropStale();
    assert.equal(answers.size, 0, 'unsynced: nothing stands');
  });

  it('keeps at most eight requests\' answers, dropping the oldest', async () => {
    const answers = new ListAnswers(() => 1);
    for (let i = 0; i < 50; i++) await answers.answer(`k${i}`, async () => ({ i }));
    assert.equal(answers.size, 8);
  });

  it('a kept answer is encoded once: the same bytes each time, equal to a fresh encoding', async () => {
    const answers = new ListAnswers(() => 1);
    const container = { id: 'a'.repeat(64), podSandboxId: 'b'.repeat(64), metadata: { name: 'app', attempt: 1 }, state: 'CONTAINER_RUNNING' as const, labels: { x: 'y' } };
    const kept = await answers.answer('k', async () => ({ containers: [container] }));
    const serialize = criContract().runtime.v1.RuntimeService.service.ListContainers.responseSerialize;
    const first = serialize(kept);
    assert.equal(serialize(kept), first, 'the bytes made the first time');
    assert.deepEqual(serialize({ containers: [{ ...container }] }), first);
    assert.notEqual(serialize({ containers: [{ ...container }] }), serialize({ containers: [{ ...container }] }), 'other answers are encoded each time');
  });
});

describe('kept list answers over the state cache', () => {
  const POD = idWithPrefix('aa00', 'a');
  const APP = idWithPrefix('c1', '1');
  const NEW = idWithPrefix('c2', '2');
  let f: FakeShim;
  let cache: DockerStateCache;
  afterEach(async () => {
    await cache.stop();
    await f.close();
  });

  async function setUp(): Promise<FakeShim['shim']> {
    f = await fakeShimContext();
    addPauseContainer(f.docker, POD);
    addPodContainer(f.docker, APP, POD);
    cache = new DockerStateCache(f.docker, silentLogger(), { initialMs: 5, maxMs: 20, subscribeTimeoutMs: 1_000 });
    await cache.start();
    const checkpoints = f.shim.checkpoints;
    return {
      ...f.shim,
      dockerCached: new CachingDockerClient(f.docker, cache),
      listAnswers: new ListAnswers(() => (cache.version === undefined ? undefined : cache.version + checkpoints.version)),
    };
  }
  const containerIds = async (shim: FakeShim['shim']): Promise<string[]> =>
    ((await listContainers(shim, { filter: null }, callContext('ListContainers'))).containers ?? []).map((c) => `${c.id} ${c.state}`).sort();
  const podIds = async (shim: FakeShim['shim']): Promise<string[]> => ((await listPodSandbox(shim, { filter: null }, callContext('ListPodSandbox'))).items ?? []).map((p) => `${p.id} ${p.state}`).sort();

  it('sees a container made, stopped and removed as soon as the cache has it', async () => {
    const shim = await setUp();
    const first = await listContainers(shim, { filter: null }, callContext('ListContainers'));
    assert.equal(await listContainers(shim, { filter: null }, callContext('ListContainers')), first, 'nothing changed: the kept answer');
    f.docker.calls.length = 0;

    addPodContainer(f.docker, NEW, POD);
    f.docker.emit('create', NEW, f.docker.containers.get(NEW)!.Config.Labels);
    await waitFor('the new container', async () => (await containerIds(shim)).length === 2);

    const app = f.docker.containers.get(APP)!;
    app.State = { ...app.State, ...exitedState(0) };
    f.docker.emit('die', APP, f.docker.containers.get(APP)!.Config.Labels);
    await waitFor('the stopped container', async () => (await containerIds(shim)).includes(`${APP} CONTAINER_EXITED`));

    f.docker.containers.delete(NEW);
    f.docker.emit('destroy', NEW, {});
    await waitFor('the removed container gone', async () => (await containerIds(shim)).length === 1);

    // A container's image as listed follows the image's names: an image event moves the version.
    const kept = await listContainers(shim, { filter: null }, callContext('ListContainers'));
    f.docker.emit('tag', 'sha256:1111', {}, 'image');
    await waitFor('a fresh answer after an image change', async () => (await listContainers(shim, { filter: null }, callContext('ListContainers'))) !== kept);
  });

  it('sees a checkpoint-only pod come and go, and the cache\'s loss of Docker', async () => {
    const shim = await setUp();
    assert.deepEqual(await podIds(shim), [`${POD} SANDBOX_READY`]);
    const gone = idWithPrefix('dd00', 'd');
    await shim.checkpoints.write(sandboxCheckpoint({ id: gone }));
    assert.deepEqual(await podIds(shim), [`${POD} SANDBOX_READY`, `${gone} SANDBOX_NOTREADY`].sort(), 'the written checkpoint, at once');
    await shim.checkpoints.remove(gone);
    assert.deepEqual(await podIds(shim), [`${POD} SANDBOX_READY`]);

    const kept = await listPodSandbox(shim, { filter: null }, callContext('ListPodSandbox'));
    const before = cache.version;
    f.docker.endStreams(new Error('connection reset'));
    await waitFor('the cache to resync', () => cache.version !== undefined && cache.version !== before);
    assert.notEqual(await listPodSandbox(shim, { filter: null }, callContext('ListPodSandbox')), kept, 'a resync is a change');
  });
});
