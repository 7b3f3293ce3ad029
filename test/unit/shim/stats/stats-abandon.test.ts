// Stats and metrics calls whose callers gave up stop their work: the abort reaches the slice
// loop and the Docker requests under way; overlapping identical calls share one collection, and
// one caller leaving does not stop it for another (fake Docker, no daemon).
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CONTAINER_TYPE_LABEL, SANDBOX_ID_LABEL, TYPE_CONTAINER } from '../../../../src/conventions/labels';
import { DeadlineExceededError } from '../../../../src/errors';
import { listContainerStats } from '../../../../src/shim/stats/list-container-stats';
import { listPodSandboxMetrics } from '../../../../src/shim/stats/list-pod-sandbox-metrics';
import { mapInSlices } from '../../../../src/stats/map-in-slices';
import { callContext, fakeShimContext, type FakeShim } from '../../../support/fake-context';
import { waitFor } from '../../../support/poll';
import { runningState } from '../../../support/fixtures/docker-container';
import { decodePodMetrics } from '../../../support/pod-metrics';
import { criContract } from '../../../../src/cri/contract';

/** What the server sends for a ListPodSandboxMetrics answer: the bytes its handler encoded. */
const encoded = (answer: object): Buffer => criContract().runtime.v1.RuntimeService.service.ListPodSandboxMetrics.responseSerialize(answer);

describe('mapInSlices', () => {
  it('starts no further slice once its signal aborts, and rejects with the reason', async () => {
    const caller = new AbortController();
    const reason = new DeadlineExceededError('the request\'s deadline passed');
    const seen: number[] = [];
    const run = mapInSlices(
      Array.from({ length: 100 }, (_, i) => i),
      async (i) => {
        seen.push(i);
        if (i === 0) caller.abort(reason);
        return i;
      },
      caller.signal,
      10,
    );
    await assert.rejects(run, (err) => err === reason);
    assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});

describe('stats and metrics calls given up on', () => {
  let f: FakeShim;
  beforeEach(async () => {
    f = await fakeShimContext();
  });
  afterEach(() => f.close());

  const listCalls = () => f.docker.calls.filter((c) => c.method === 'listContainers');

  it('ListContainerStats: the caller giving up aborts the inspects under way, and it answers with the reason', async () => {
    for (let i = 0; i < 40; i++) {
      f.docker.addContainer({ State: runningState(), Config: { Labels: { [CONTAINER_TYPE_LABEL]: TYPE_CONTAINER, [SANDBOX_ID_LABEL]: 'a'.repeat(64) } } });
    }
    f.docker.fail('inspectContainer', { hang: true, times: Infinity });
    const caller = new AbortController();
    const call = listContainerStats(f.shim, { filter: null }, callContext('ListContainerStats', caller));
    const inspects = await waitFor('the first slice\'s inspects', () => {
      const found = f.docker.calls.filter((c) => c.method === 'inspectContainer');
      return found.length > 0 && found;
    });
    assert.ok(inspects.every((c) => c.signal !== undefined && !c.signal.aborted));
    const reason = new DeadlineExceededError('ListContainerStats: the request\'s deadline passed');
    caller.abort(reason);
    await assert.rejects(call, (err) => err === reason);
    assert.ok(inspects.every((c) => c.signal!.aborted), 'every Docker request under way was told');
    assert.ok(f.docker.calls.filter((c) => c.method === 'inspectContainer').length <= 32, 'no slice started after the abort');
  });

  it('ListPodSandboxMetrics: two calls in flight share one collection and one answer', async () => {
    const held = f.docker.hold('listContainers');
    const a = listPodSandboxMetrics(f.shim, callContext('ListPodSandboxMetrics'));
    const b = listPodSandboxMetrics(f.shim, callContext('ListPodSandboxMetrics'));
    await waitFor('the collection\'s two lists', () => listCalls().length === 2);
    held.release();
    const [ra, rb] = await Promise.all([a, b]);
    assert.equal(encoded(ra), encoded(rb), 'one collection answered both, with the same bytes');
    assert.equal(listCalls().length, 2, 'Docker was asked once for the two calls');
  });

  it('ListPodSandboxMetrics: one caller leaving does not stop the collection another waits for; the last one leaving does', async () => {
    const held = f.docker.hold('listContainers');
    const quitter = new AbortController();
    const a = listPodSandboxMetrics(f.shim, callContext('ListPodSandboxMetrics', quitter));
    const b = listPodSandboxMetrics(f.shim, callContext('ListPodSandboxMetrics'));
    await waitFor('the collection\'s two lists', () => listCalls().length === 2);
    quitter.abort(new DeadlineExceededError('deadline'));
    await assert.rejects(a, DeadlineExceededError);
    assert.ok(listCalls().every((c) => !c.signal!.aborted), 'the shared lists go on for the caller still waiting');
    held.release();
    assert.deepEqual(decodePodMetrics(encoded(await b)), []);

    // Now both leave: the collection's requests are aborted.
    const again = f.docker.hold('listContainers');
    const one = new AbortController();
    const two = new AbortController();
    const c = listPodSandboxMetrics(f.shim, callContext('ListPodSandboxMetrics', one));
    const d = listPodSandboxMetrics(f.shim, callContext('ListPodSandboxMetrics', two));
    await waitFor('the second collection\'s lists', () => listCalls().length === 4);
    one.abort(new DeadlineExceededError('deadline'));
    two.abort(new DeadlineExceededError('deadline'));
    await assert.rejects(c, DeadlineExceededError);
    await assert.rejects(d, DeadlineExceededError);
    assert.ok(listCalls().slice(2).every((call) => call.signal!.aborted), 'nobody waits: the collection\'s requests are aborted');
    again.release();
    assert.equal(f.shim.sharedReads.size, 0);
  });
});
