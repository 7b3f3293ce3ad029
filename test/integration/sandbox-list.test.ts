// ListPodSandbox and StreamPodSandboxes filters (alone and combined), listing across a shim
// restart on the same root directory, and 20 concurrent RunPodSandbox calls.
import { strict as assert } from 'node:assert';
import { before, describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import type { PodSandbox__Output, PodSandboxFilter } from '../../src/cri/types';
import { rejectsWith } from '../support/client';
import { TEST_LABEL } from '../support/cleanup';
import { dockerApi } from '../support/images';
import { useShim } from '../support/fixture';
import { podConfig } from '../support/pods';

const ids = (items: PodSandbox__Output[]): string[] => items.map((s) => s.id).sort();

describe('listing pod sandboxes', () => {
  const f = useShim();
  const { run } = f;
  // ready: two "web" pods, one "db" pod; notReady: a stopped "web" pod, and a "db" pod whose
  // pause container was removed behind the shim's back (listed from its checkpoint).
  const pods = { webA: '', webB: '', db: '', webStopped: '', dbGone: '' };

  before(async () => {
    const start = async (tier: string): Promise<string> =>
      (await f.client.runtime.RunPodSandbox({ config: podConfig(run, { labels: { tier } }) })).podSandboxId;
    [pods.webA, pods.webB, pods.db, pods.webStopped, pods.dbGone] = await Promise.all([
      start('web'),
      start('web'),
      start('db'),
      start('web'),
      start('db'),
    ]);
    await f.client.runtime.StopPodSandbox({ podSandboxId: pods.webStopped });
    await dockerApi().getContainer(pods.dbGone).remove({ force: true });
  });

  /** Both list RPCs with the same filter, restricted to this test's pods; they must agree. */
  async function list(filter: PodSandboxFilter): Promise<string[]> {
    const labelSelector = { [TEST_LABEL]: run, ...(filter.labelSelector ?? {}) };
    const listed = await f.client.runtime.ListPodSandbox({ filter: { ...filter, labelSelector } });
    const streamed = await f.client.runtime.StreamPodSandboxes({ filter: { ...filter, labelSelector } });
    assert.deepEqual(ids(streamed.flatMap((m) => m.podSandboxes)), ids(listed.items), 'stream and list agree');
    return ids(listed.items);
  }

  it('lists every sandbox of the run, ready or not', async () => {
    assert.deepEqual(await list({}), Object.values(pods).sort());
  });

  it('filters by state', async () => {
    assert.deepEqual(await list({ state: { state: 'SANDBOX_READY' } }), [pods.webA, pods.webB, pods.db].sort());
    assert.deepEqual(await list({ state: { state: 'SANDBOX_NOTREADY' } }), [pods.webStopped, pods.dbGone].sort());
  });

  it('filters by label selector', async () => {
    assert.deepEqual(await list({ labelSelector: { tier: 'web' } }), [pods.webA, pods.webB, pods.webStopped].sort());
    assert.deepEqual(await list({ labelSelector: { tier: 'db' } }), [pods.db, pods.dbGone].sort());
    assert.deepEqual(await list({ labelSelector: { tier: 'cache' } }), []);
  });

  it('filters by full ID and by prefix', async () => {
    assert.deepEqual(await list({ id: pods.db }), [pods.db]);
    assert.deepEqual(await list({ id: pods.dbGone.slice(0, 20) }), [pods.dbGone]);
    assert.deepEqual(await list({ id: 'f'.repeat(64) }), []);
  });

  it('combines filters', async () => {
    assert.deepEqual(await list({ labelSelector: { tier: 'web' }, state: { state: 'SANDBOX_NOTREADY' } }), [pods.webStopped]);
    assert.deepEqual(await list({ labelSelector: { tier: 'db' }, state: { state: 'SANDBOX_NOTREADY' } }), [pods.dbGone]);
    assert.deepEqual(await list({ id: pods.webA, state: { state: 'SANDBOX_READY' }, labelSelector: { tier: 'web' } }), [pods.webA]);
    assert.deepEqual(await list({ id: pods.webA, state: { state: 'SANDBOX_NOTREADY' } }), []);
    assert.deepEqual(await list({ id: pods.webA, labelSelector: { tier: 'db' } }), []);
  });

  it('lists only sandboxes the shim made', async () => {
    // Named like a sandbox, but without the shim's podsandbox label.
    const stranger = await dockerApi().createContainer({
      name: `k8s_POD_stranger-${run}_sandbox-test_uid_0`,
      Image: (await dockerApi().getContainer(pods.webA).inspect()).Config.Image,
      Labels: f.labels(),
    });
    try {
      assert.ok(!(await list({})).includes(stranger.id));
    } finally {
      await stranger.remove({ force: true });
    }
  });
});

describe('sandboxes across a shim restart', () => {
  const f = useShim({ shim: false });
  const { run } = f;

  it('lists every sandbox with the same ID and state after a restart', async () => {
    const rootDir = f.tempDir('sandbox-restart');
    let { shim } = await f.startShim({ rootDir });
    const runPod = async (): Promise<string> => (await shim.client.runtime.RunPodSandbox({ config: podConfig(run) })).podSandboxId;
    const ready = await runPod();
    const stopped = await runPod();
    const gone = await runPod();
    await shim.client.runtime.StopPodSandbox({ podSandboxId: stopped });
    const selector = { labelSelector: { [TEST_LABEL]: run } };
    const beforeRestart = (await shim.client.runtime.ListPodSandbox({ filter: selector })).items;
    await shim.stop();

    // While the shim is down, a pause container disappears.
    await dockerApi().getContainer(gone).remove({ force: true });

    ({ shim } = await f.startShim({ rootDir }));
    const afterRestart = (await shim.client.runtime.ListPodSandbox({ filter: selector })).items;
    const stateOf = (items: PodSandbox__Output[], id: string): string | undefined => items.find((s) => s.id === id)?.state;
    assert.deepEqual(ids(afterRestart), [ready, stopped, gone].sort());
    assert.equal(stateOf(afterRestart, ready), 'SANDBOX_READY');
    assert.equal(stateOf(afterRestart, stopped), 'SANDBOX_NOTREADY');
    assert.equal(stateOf(afterRestart, gone), 'SANDBOX_NOTREADY');
    for (const s of afterRestart) {
      const was = beforeRestart.find((b) => b.id === s.id)!;
      assert.deepEqual(s.metadata, was.metadata);
      assert.deepEqual(s.labels, was.labels);
      assert.equal(s.createdAt, was.createdAt);
    }
    for (const id of [ready, stopped, gone]) {
      await shim.client.runtime.StopPodSandbox({ podSandboxId: id });
      await shim.client.runtime.RemovePodSandbox({ podSandboxId: id });
    }
    assert.equal((await shim.client.runtime.ListPodSandbox({ filter: selector })).items.length, 0);
  });
});

describe('concurrent RunPodSandbox', () => {
  const f = useShim();
  const { run } = f;

  it('makes exactly 20 sandboxes from 20 concurrent calls, and removes them concurrently', async () => {
    const configs = Array.from({ length: 20 }, () => podConfig(run));
    const results = await Promise.all(configs.map((config) => f.client.runtime.RunPodSandbox({ config })));
    const made = new Set(results.map((r) => r.podSandboxId));
    assert.equal(made.size, 20);
    const selector = { labelSelector: { [TEST_LABEL]: run } };
    const listed = (await f.client.runtime.ListPodSandbox({ filter: selector })).items;
    assert.deepEqual(ids(listed), [...made].sort());
    assert.ok(listed.every((s) => s.state === 'SANDBOX_READY'));
    const inDocker = await dockerApi().listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${run}`] } });
    assert.equal(inDocker.length, 20);

    // Stop each twice at once (stop is safe to call concurrently), then remove them all at once.
    await Promise.all([...made].flatMap((id) => [id, id].map((podSandboxId) => f.client.runtime.StopPodSandbox({ podSandboxId }))));
    await Promise.all([...made].map((podSandboxId) => f.client.runtime.RemovePodSandbox({ podSandboxId })));
    assert.equal((await f.client.runtime.ListPodSandbox({ filter: selector })).items.length, 0);
  });

  it('lets exactly one of two concurrent calls for the same pod win; the other is ALREADY_EXISTS', async () => {
    const config = podConfig(run);
    const results = await Promise.allSettled([1, 2, 3].map(() => f.client.runtime.RunPodSandbox({ config })));
    const won = results.filter((r): r is PromiseFulfilledResult<{ podSandboxId: string }> => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.equal(won.length, 1);
    for (const r of lost) rejectsWith(Code.ALREADY_EXISTS, /already in use by running sandbox/)(r.reason);
    const id = won[0]!.value.podSandboxId;
    assert.equal((await f.client.runtime.PodSandboxStatus({ podSandboxId: id })).status?.state, 'SANDBOX_READY');
    await f.client.runtime.RemovePodSandbox({ podSandboxId: id });
  });
});
