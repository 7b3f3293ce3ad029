// The typed query over the shim's objects (src/object-store/shim-objects.ts): the one matcher, the
// Docker list call it becomes where Docker must be asked, the objects made from inspect
// documents and from list entries (the same but for `inspect`), the grouping by pod, and the
// caching client answering it from memory exactly as Docker's list would.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { DockerStateCache } from '../../../src/docker-cache/state-cache';
import { listObjectsFromDocker, ShimObjectStore } from '../../../src/object-store/object-store';
import {
  dockerListOf,
  groupBySandbox,
  matchesObjectQuery,
  objectFromInspect,
  objectFromSummary,
  objectQueryOf,
  type ObjectQuery,
  type ShimObject,
} from '../../../src/object-store/shim-objects';
import type { ContainerInspect } from '../../../src/docker/types';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker } from '../../support/fake-docker';
import { INSPECT, inspectDoc, listEntryOf, LISTED, runningState } from '../../support/fixtures/docker-container';

const TYPE = 'io.kubernetes.docker.type';
const SANDBOX_LABEL = 'io.kubernetes.sandbox.id';
const POD = 'a'.repeat(64);
const OTHER_POD = 'ab' + 'c'.repeat(62);
const APP = 'b'.repeat(64);
const EXITED = 'bd' + 'e'.repeat(62);

function pause(id: string, running: boolean, labels: Record<string, string> = {}): ContainerInspect {
  return inspectDoc({
    Id: id,
    Name: `/k8s_POD_web_default_uid-${id.slice(0, 3)}_0`,
    Created: `2026-11-22T02:00:0${id === POD ? 1 : 2}Z`,
    State: running ? runningState() : { Status: 'exited', StartedAt: '2026-11-22T02:33:52Z', FinishedAt: '2026-11-22T02:40:00Z' },
    Config: { Image: 'pause', Labels: { [TYPE]: 'podsandbox', ...labels } },
  });
}

function container(id: string, sandbox: string, running: boolean, labels: Record<string, string> = {}): ContainerInspect {
  return inspectDoc({
    Id: id,
    Name: `/k8s_app_web_default_uid-${sandbox.slice(0, 3)}_1`,
    Created: `2026-11-22T02:01:0${id === APP ? 1 : 2}Z`,
    State: running ? runningState() : { Status: 'exited', StartedAt: '2026-11-22T02:33:52Z', FinishedAt: '2026-11-22T02:40:00Z' },
    Config: { Image: 'busybox', Labels: { [TYPE]: 'container', [SANDBOX_LABEL]: sandbox, ...labels } },
  });
}

const DOCS = [
  pause(POD, true, { app: 'web', 'annotation.note': 'x' }),
  pause(OTHER_POD, false, { app: 'db' }),
  container(APP, POD, true, { tier: 'front' }),
  container(EXITED, OTHER_POD, false, { tier: 'back' }),
];

function objects(): ShimObject[] {
  return DOCS.map((d) => objectFromInspect(d, d.Config.Image)!);
}

function ids(q: ObjectQuery): string[] {
  return objects()
    .filter((o) => matchesObjectQuery(o, q))
    .map((o) => o.id);
}

describe('the typed query over the shim’s objects', () => {
  it('makes the same object from an inspect document as from Docker’s list entry of it, but for the document', () => {
    for (const doc of DOCS) {
      const { inspect, ...fromInspect } = objectFromInspect(doc, 'busybox:1')!;
      const { inspect: none, ...fromList } = objectFromSummary(listEntryOf(doc, 'busybox:1'))!;
      assert.equal(inspect, doc);
      assert.equal(none, undefined);
      assert.deepEqual(fromList, fromInspect);
    }
    const [pod, , app] = objects();
    assert.deepEqual([pod!.kind, pod!.sandboxId, pod!.state, pod!.labels, pod!.annotations], ['sandbox', '', 'SANDBOX_READY', { app: 'web' }, { note: 'x' }]);
    assert.deepEqual([app!.kind, app!.sandboxId, app!.state, app!.name], ['container', POD, 'CONTAINER_RUNNING', 'k8s_app_web_default_uid-aaa_1']);
    assert.equal(objectFromInspect(inspectDoc({ Config: { Labels: { other: 'x' } } }), 'busybox'), undefined, 'not the shim’s');
  });

  it('makes the same object from what Docker 20.10 answered to inspect and to list for one container', () => {
    const { inspect, ...fromInspect } = objectFromInspect(INSPECT, LISTED.Image)!;
    const { inspect: none, ...fromList } = objectFromSummary(LISTED)!;
    assert.equal(inspect, INSPECT);
    assert.equal(none, undefined);
    assert.deepEqual(fromList, fromInspect);
  });

  it('matches any kind when asked for any, and asks Docker for every container with the type label', () => {
    assert.deepEqual(ids({ kind: 'any' }), [POD, OTHER_POD, APP, EXITED]);
    assert.deepEqual(ids({ kind: 'any', id: 'ab' }), [OTHER_POD]);
    assert.deepEqual(ids({ kind: 'any', state: 'CONTAINER_RUNNING' }), [APP], 'a CRI state names its kind');
    assert.deepEqual(dockerListOf({ kind: 'any' }), { all: true, filters: { label: [TYPE] } });
  });

  it('matches the kind, and ID prefixes only from the start', () => {
    assert.deepEqual(ids({ kind: 'sandbox' }), [POD, OTHER_POD]);
    assert.deepEqual(ids({ kind: 'container' }), [APP, EXITED]);
    assert.deepEqual(ids({ kind: 'sandbox', id: 'ab' }), [OTHER_POD]);
    assert.deepEqual(ids({ kind: 'sandbox', id: 'b' }), [], 'a container’s ID does not make it a sandbox');
    assert.deepEqual(ids({ kind: 'sandbox', id: 'cc' }), [], 'a prefix, not a substring');
    assert.deepEqual(ids({ kind: 'container', id: APP }), [APP], 'a full ID');
    assert.deepEqual(ids({ kind: 'container', id: '' }), [APP, EXITED], 'an empty ID is no filter');
  });

  it('never matches a UUID-shaped or otherwise non-hex ID, and Docker is not asked for one', () => {
    const uuid = '6f1c2f0e-3b1a-4c8e-9d2a-1b2c3d4e5f60';
    assert.deepEqual(ids({ kind: 'sandbox', id: uuid }), []);
    assert.deepEqual(ids({ kind: 'container', sandboxId: uuid }), []);
    assert.equal(dockerListOf({ kind: 'sandbox', id: uuid }), undefined);
    assert.equal(dockerListOf({ kind: 'container', sandboxId: 'k8s_POD' }), undefined);
  });

  it('matches a pod sandbox ID as a prefix, the full one too', () => {
    assert.deepEqual(ids({ kind: 'container', sandboxId: POD }), [APP]);
    assert.deepEqual(ids({ kind: 'container', sandboxId: 'a' }), [APP, EXITED], 'both pods start with a');
    assert.deepEqual(ids({ kind: 'container', sandboxId: 'ab' }), [EXITED]);
  });

  it('matches CRI label selectors on the CRI labels only', () => {
    assert.deepEqual(ids({ kind: 'container', labels: { tier: 'front' } }), [APP]);
    assert.deepEqual(ids({ kind: 'container', labels: { tier: 'front', extra: 'x' } }), [], 'every pair must hold');
    assert.deepEqual(ids({ kind: 'container', labels: {} }), [APP, EXITED]);
    assert.deepEqual(ids({ kind: 'container', labels: { [TYPE]: 'container' } }), [], 'the shim’s own labels are not CRI labels');
    assert.deepEqual(ids({ kind: 'sandbox', labels: { note: 'x' } }), [], 'nor are annotations');
  });

  it('matches CRI states, and all parts together', () => {
    assert.deepEqual(ids({ kind: 'sandbox', state: 'SANDBOX_READY' }), [POD]);
    assert.deepEqual(ids({ kind: 'sandbox', state: 'SANDBOX_NOTREADY' }), [OTHER_POD]);
    assert.deepEqual(ids({ kind: 'container', state: 'CONTAINER_EXITED' }), [EXITED]);
    assert.deepEqual(ids({ kind: 'container', state: 'CONTAINER_CREATED' }), []);
    assert.deepEqual(ids({ kind: 'container', id: 'b', sandboxId: 'a', state: 'CONTAINER_RUNNING', labels: { tier: 'front' } }), [APP]);
    assert.deepEqual(ids({ kind: 'container', id: 'b', sandboxId: 'a', state: 'CONTAINER_RUNNING', labels: { tier: 'back' } }), []);
  });

  it('takes CRI’s list filters as they arrive (defaults filled in) or absent', () => {
    assert.deepEqual(objectQueryOf('container', null), { kind: 'container' });
    assert.deepEqual(objectQueryOf('container', { id: '', podSandboxId: '', state: null, labelSelector: {} }), { kind: 'container' });
    assert.deepEqual(objectQueryOf('sandbox', { id: 'ab', state: { state: 'SANDBOX_READY' }, labelSelector: { app: 'db' } }), {
      kind: 'sandbox',
      id: 'ab',
      state: 'SANDBOX_READY',
      labels: { app: 'db' },
    });
  });

  it('asks Docker for a superset: the type label, a whole sandbox ID, the selector, the ID; running ones for RUNNING and READY', () => {
    assert.deepEqual(dockerListOf({ kind: 'container', sandboxId: POD, labels: { tier: 'front' }, id: 'b' }), {
      all: true,
      filters: { label: [`${TYPE}=container`, `${SANDBOX_LABEL}=${POD}`, 'tier=front'], id: ['b'] },
    });
    assert.deepEqual(dockerListOf({ kind: 'container', sandboxId: 'aa' }), { all: true, filters: { label: [`${TYPE}=container`] } }, 'a prefix is the matcher’s');
    assert.equal(dockerListOf({ kind: 'container', state: 'CONTAINER_RUNNING' })!.all, false);
    assert.equal(dockerListOf({ kind: 'sandbox', state: 'SANDBOX_READY' })!.all, false);
    assert.equal(dockerListOf({ kind: 'sandbox', state: 'SANDBOX_NOTREADY' })!.all, true);
    assert.deepEqual(dockerListOf({ kind: 'any', name: 'k8s_POD_web.v2_default_u+1_0' }), {
      all: true,
      filters: { label: [TYPE], name: ['^/k8s_POD_web\\.v2_default_u\\+1_0$'] },
    }, 'a name is whole: anchored, its regular-expression specials escaped');
  });

  it('matches a name whole', () => {
    const [, , app] = objects();
    assert.deepEqual(ids({ kind: 'any', name: app!.name }), [APP]);
    assert.deepEqual(ids({ kind: 'any', name: app!.name.slice(0, -1) }), [], 'not a prefix');
    assert.deepEqual(ids({ kind: 'sandbox', name: app!.name }), [], 'every part holds');
  });

  it('groups containers by pod', () => {
    const grouped = groupBySandbox(objects().filter((o) => o.kind === 'container'));
    assert.deepEqual([...grouped].map(([pod, members]) => [pod, members.map((m) => m.id)]), [
      [POD, [APP]],
      [OTHER_POD, [EXITED]],
    ]);
  });
});

describe('the store of the shim’s objects: the typed query answered by Docker and by the state cache', () => {
  let cache: DockerStateCache | undefined;
  afterEach(async () => {
    await cache?.stop();
    cache = undefined;
  });

  const QUERIES: ObjectQuery[] = [
    { kind: 'sandbox' },
    { kind: 'container' },
    { kind: 'sandbox', state: 'SANDBOX_READY' },
    { kind: 'container', state: 'CONTAINER_RUNNING' },
    { kind: 'container', sandboxId: POD },
    { kind: 'container', sandboxId: 'a', labels: { tier: 'back' } },
    { kind: 'sandbox', id: 'ab' },
    { kind: 'sandbox', id: '6f1c2f0e-3b1a' },
    { kind: 'any' },
    { kind: 'any', id: 'b' },
    { kind: 'any', name: `k8s_POD_web_default_uid-${POD.slice(0, 3)}_0` },
  ];

  it('gives the same objects, the cache’s newest first and carrying its documents and asking Docker nothing', async () => {
    const docker = new FakeDocker();
    docker.addImage('busybox', { Id: 'sha256:1111' });
    docker.addImage('pause', { Id: 'sha256:1111' });
    for (const d of DOCS) docker.containers.set(d.Id, d);
    cache = new DockerStateCache(docker, silentLogger());
    const store = new ShimObjectStore(docker, cache);
    // The fake lists in insertion order, Docker newest first: compared by ID.
    const strip = (found: ShimObject[]): object[] => found.map(({ inspect: _inspect, ...rest }) => rest).sort((a, b) => (a.id < b.id ? -1 : 1));

    const fromDocker = await Promise.all(QUERIES.map((q) => listObjectsFromDocker(docker, q)));
    assert.deepEqual(fromDocker.map((found) => found.map((o) => o.inspect)).flat(), fromDocker.flat().map(() => undefined));
    await cache.start();
    docker.calls.length = 0;
    for (const [i, q] of QUERIES.entries()) {
      const fromCache = await store.list(q);
      assert.deepEqual(strip(fromCache), strip(fromDocker[i]!), JSON.stringify(q));
      for (const o of fromCache) assert.equal(o.inspect, cache.containers.get(o.id), 'the cache’s own document');
    }
    assert.deepEqual(
      docker.calls.map((c) => `${c.method} ${String(c.args[0])}`),
      ['inspectImage busybox', 'inspectImage pause'],
      'only the images behind the Image column, each once: a sandbox query looks up none, an any-kind query its pods\' too',
    );
    assert.deepEqual((await store.list({ kind: 'sandbox' })).map((o) => o.id), [OTHER_POD, POD], 'newest first');
    assert.equal((await store.list({ kind: 'container' }))[0], (await store.list({ kind: 'container' }))[0], 'made once per document');

    // Docker hangs after an image event: the pods still come from memory.
    cache.images.invalidate();
    docker.fail('*', { hang: true, times: Infinity });
    const pods = await store.list({ kind: 'sandbox' }, { signal: AbortSignal.timeout(1_000) });
    assert.deepEqual(pods.map((o) => o.id), [OTHER_POD, POD]);
  });
});
