// ListPodSandbox, PodSandboxStatus, StopPodSandbox and RemovePodSandbox over the fake Docker
// (test/support/fake-context.ts): which sandboxes an ID or a filter names, among pause
// containers and checkpoints whose container is gone (a unique prefix, an ambiguous one, none;
// UUID-shaped and other non-hex IDs; a container's ID where a pod's belongs), what each call
// answers for them (NOT_FOUND, INVALID_ARGUMENT, or success for Stop and Remove of what is not
// there), and what it asked of Docker and the network plugin.
import assert from 'node:assert/strict';
import { status as Code } from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { PodSandboxFilter__Output, PodSandboxState__Output } from '../../../../src/cri/types';
import { CachingDockerClient } from '../../../../src/docker-cache/caching-client';
import { CATCH_UP_WAIT_MS, DockerStateCache } from '../../../../src/docker-cache/state-cache';
import { DockerNotFoundError, DockerServerError, UnavailableError } from '../../../../src/errors';
import { ShimObjectStore } from '../../../../src/object-store/object-store';
import { silentLogger } from '../../../../src/util/logger';
import { listPodSandbox } from '../../../../src/shim/sandbox/list-pod-sandbox';
import { podSandboxStatus } from '../../../../src/shim/sandbox/pod-sandbox-status';
import { removePodSandbox } from '../../../../src/shim/sandbox/remove-pod-sandbox';
import { PAUSE_STOP_GRACE_SECONDS } from '../../../../src/shim/sandbox/support/pod-containers';
import { stopPodSandbox } from '../../../../src/shim/sandbox/stop-pod-sandbox';
import type { ShimContext } from '../../../../src/shim/context';
import { callContext, fakeShimContext, type FakeShim } from '../../../support/fake-context';
import { waitFor } from '../../../support/poll';
import { failure, failureCode } from '../../../support/rejection';
import { sandboxCheckpoint } from '../../../support/fixtures/checkpoint';
import { addPauseContainer, addPodContainer, exitedState, idWithPrefix, UUID_ID } from '../../../support/fixtures/shim-containers';

/** A running pod with a checkpoint and a running container. */
const POD_A = idWithPrefix('aa1', 'a');
const A_APP = idWithPrefix('ac', '1');
/** A stopped pod with a checkpoint and an exited container. */
const POD_B = idWithPrefix('bb1', 'b');
const B_APP = idWithPrefix('bc', '2');
/** A pod whose pause container is gone: its checkpoint alone stands for it. */
const GONE_C = idWithPrefix('cc1', 'c');
/** A running pod without a checkpoint (made before checkpoints, or its file lost). */
const POD_D = idWithPrefix('dd1', 'd');
const REMOVE_QUERY = { force: true, removeVolumes: true };

const state = (s: PodSandboxState__Output) => ({ state: s });

describe('sandbox handlers over the fake Docker', () => {
  let f: FakeShim;
  const checkpoint = (id: string, labels: Record<string, string>) => f.shim.checkpoints.write(sandboxCheckpoint({ id, labels, hostNetwork: false }));
  beforeEach(async () => {
    f = await fakeShimContext();
    addPauseContainer(f.docker, POD_A, { labels: { app: 'a' } });
    addPodContainer(f.docker, A_APP, POD_A);
    addPauseContainer(f.docker, POD_B, { labels: { app: 'b' }, state: exitedState(0), name: 'db' });
    addPodContainer(f.docker, B_APP, POD_B, { state: exitedState(137) });
    addPauseContainer(f.docker, POD_D, { labels: { app: 'd' }, name: 'old' });
    await checkpoint(POD_A, { app: 'a' });
    await checkpoint(POD_B, { app: 'b' });
    await checkpoint(GONE_C, { app: 'c' });
  });
  afterEach(() => f.close());

  describe('ListPodSandbox', () => {
    const listOf = async (filter: Partial<PodSandboxFilter__Output> | null): Promise<Array<[string, string]>> => {
      const full = filter && { id: '', state: null, labelSelector: {}, ...filter };
      const { items } = await listPodSandbox(f.shim, { filter: full }, callContext('ListPodSandbox'));
      return (items ?? []).map((s): [string, string] => [s.id ?? '', String(s.state)]).sort();
    };

    it('lists the pause containers, and the checkpoints whose container is gone as NOTREADY', async () => {
      assert.deepEqual(await listOf(null), [
        [POD_A, 'SANDBOX_READY'],
        [POD_B, 'SANDBOX_NOTREADY'],
        [GONE_C, 'SANDBOX_NOTREADY'],
        [POD_D, 'SANDBOX_READY'],
      ]);
    });

    it('takes the ID as a prefix, over pause containers and checkpoints alike', async () => {
      assert.deepEqual(await listOf({ id: 'aa' }), [[POD_A, 'SANDBOX_READY']]);
      assert.deepEqual(await listOf({ id: 'cc' }), [[GONE_C, 'SANDBOX_NOTREADY']]);
      assert.deepEqual(await listOf({ id: POD_B }), [[POD_B, 'SANDBOX_NOTREADY']]);
      assert.deepEqual(await listOf({ id: 'ac' }), [], 'a container’s ID names no pod');
      await checkpoint(idWithPrefix('aa2', 'e'), {});
      assert.deepEqual((await listOf({ id: 'aa' })).map(([id]) => id), [POD_A, idWithPrefix('aa2', 'e')], 'a list answers every match of a shared prefix');
    });

    it('answers nothing for an ID that is not hex (a UUID, a name), without asking Docker', async () => {
      for (const id of [UUID_ID, 'AA1', 'web']) assert.deepEqual(await listOf({ id }), [], id);
      assert.deepEqual(f.docker.methods(), []);
    });

    it('filters by CRI state; a running pod’s checkpoint never stands in for it', async () => {
      assert.deepEqual(await listOf({ state: state('SANDBOX_READY') }), [[POD_A, 'SANDBOX_READY'], [POD_D, 'SANDBOX_READY']]);
      assert.deepEqual(await listOf({ state: state('SANDBOX_NOTREADY') }), [[POD_B, 'SANDBOX_NOTREADY'], [GONE_C, 'SANDBOX_NOTREADY']]);
    });

    it('filters by label selector, the checkpoint’s labels for a pod whose container is gone', async () => {
      assert.deepEqual(await listOf({ labelSelector: { app: 'a' } }), [[POD_A, 'SANDBOX_READY']]);
      assert.deepEqual(await listOf({ labelSelector: { app: 'c' } }), [[GONE_C, 'SANDBOX_NOTREADY']]);
      assert.deepEqual(await listOf({ labelSelector: { app: 'c', other: 'x' } }), []);
      assert.deepEqual(await listOf({ id: 'cc', state: state('SANDBOX_READY') }), [], 'every part of the filter holds');
    });
  });

  describe('PodSandboxStatus', () => {
    const status = (podSandboxId: string) => podSandboxStatus(f.shim, { podSandboxId, verbose: false }, callContext('PodSandboxStatus'));

    it('answers for a unique prefix of a pause container with the full ID', async () => {
      const { status: s } = await status('aa');
      assert.equal(s?.id, POD_A);
      assert.equal(s?.state, 'SANDBOX_READY');
      // By the full ID: the status's own inspect, and the no-op plugin's look at Docker's IPs.
      assert.deepEqual(new Set(f.docker.argsOf('inspectContainer').flat()), new Set([POD_A]));
    });

    it('answers NOTREADY from the checkpoint when the pause container is gone', async () => {
      const { status: s } = await status('cc');
      assert.equal(s?.id, GONE_C);
      assert.equal(s?.state, 'SANDBOX_NOTREADY');
      assert.deepEqual(s?.labels, { app: 'c' });
    });

    it('answers from the checkpoint when the pause container goes between the lookup and the inspect; NOT_FOUND without one', async () => {
      f.docker.fail('inspectContainer', { error: () => new DockerNotFoundError('No such container'), times: 2 });
      assert.equal((await status('aa')).status?.state, 'SANDBOX_NOTREADY');
      assert.equal(await failureCode(status('dd')), Code.NOT_FOUND);
    });

    it('answers NOT_FOUND for an ID that names no sandbox: unknown, or a container’s', async () => {
      for (const id of ['ee', idWithPrefix('ee'), A_APP, 'ac']) assert.equal(await failureCode(status(id)), Code.NOT_FOUND, id);
    });

    it('refuses a prefix two pause containers or two checkpoints share (INVALID_ARGUMENT)', async () => {
      addPauseContainer(f.docker, idWithPrefix('dd2', 'f'), { name: 'other' });
      assert.equal(await failureCode(status('dd')), Code.INVALID_ARGUMENT);
      await checkpoint(idWithPrefix('cc2', 'e'), {});
      assert.equal(await failureCode(status('cc')), Code.INVALID_ARGUMENT);
    });

    it('refuses a prefix a pause container shares with a checkpoint whose container is gone (INVALID_ARGUMENT)', async () => {
      // ListPodSandbox lists both; the call must not pick the one Docker still has.
      await checkpoint(idWithPrefix('aa2', 'e'), {});
      assert.equal(await failureCode(status('aa')), Code.INVALID_ARGUMENT);
      assert.equal((await status('aa1')).status?.id, POD_A, 'a longer prefix names one');
    });

    it('answers INVALID_ARGUMENT for an ID that cannot be one (empty, a UUID, upper case), without asking Docker', async () => {
      for (const id of ['', UUID_ID, POD_A.toUpperCase()]) assert.equal(await failureCode(status(id)), Code.INVALID_ARGUMENT, id);
      assert.deepEqual(f.docker.methods(), []);
    });
  });

  describe('StopPodSandbox', () => {
    const stop = (podSandboxId: string) => stopPodSandbox(f.shim, { podSandboxId }, callContext('StopPodSandbox'));

    it('kills what runs of the pod, tears down the network, then stops its pause container with its grace', async () => {
      await stop('aa');
      assert.deepEqual(f.network.calls, [{ step: 'tearDown', sandboxId: POD_A }]);
      assert.deepEqual(f.docker.argsOf('stopContainer'), [[A_APP, 0], [POD_A, PAUSE_STOP_GRACE_SECONDS]]);
      assert.equal(f.docker.containers.get(POD_A)?.State.Running, false);
      assert.ok(await f.shim.checkpoints.read(POD_A), 'the checkpoint stays until RemovePodSandbox');
    });

    it('succeeds again for a pod already stopped', async () => {
      await stop(POD_A);
      await stop(POD_A);
      await stop('bb');
      assert.equal(f.docker.containers.get(POD_A)?.State.Running, false);
    });

    it('releases the network of a pod whose pause container is gone, stopping no container', async () => {
      await stop('cc');
      assert.deepEqual(f.network.calls, [{ step: 'tearDown', sandboxId: GONE_C }]);
      assert.deepEqual(f.docker.argsOf('stopContainer'), []);
    });

    it('succeeds, doing nothing, for an ID that names no sandbox: unknown, a container’s, a UUID, a name', async () => {
      for (const id of ['ee', A_APP, UUID_ID, 'web']) await stop(id);
      assert.deepEqual(f.network.calls, []);
      assert.deepEqual(f.docker.argsOf('stopContainer'), []);
      assert.equal(f.docker.containers.get(A_APP)?.State.Running, true);
    });

    it('refuses an ambiguous prefix and an empty ID (INVALID_ARGUMENT), stopping nothing', async () => {
      addPauseContainer(f.docker, idWithPrefix('aa2', 'f'), { name: 'other' });
      assert.equal(await failureCode(stop('aa')), Code.INVALID_ARGUMENT);
      assert.equal(await failureCode(stop('')), Code.INVALID_ARGUMENT);
      assert.deepEqual(f.network.calls, []);
      assert.deepEqual(f.docker.argsOf('stopContainer'), []);
    });

    it('stops neither pod when a prefix names a running pod and a gone one (INVALID_ARGUMENT)', async () => {
      await checkpoint(idWithPrefix('aa2', 'e'), {});
      assert.equal(await failureCode(stop('aa')), Code.INVALID_ARGUMENT);
      assert.deepEqual(f.network.calls, []);
      assert.equal(f.docker.containers.get(POD_A)?.State.Running, true);
    });

    it('kills the pod\'s containers before a teardown that hangs has finished, and the pause container only after it', async () => {
      let finish = (): void => undefined;
      f.network.holdTearDown = new Promise<void>((resolve) => (finish = resolve));
      const stopping = stop('aa');
      await waitFor('the teardown to be under way', () => f.network.calls.length === 1);
      await waitFor('the container to be killed', () => f.docker.containers.get(A_APP)?.State.Running === false, { timeoutMs: 5_000 });
      assert.deepEqual(f.docker.argsOf('stopContainer'), [[A_APP, 0]], 'the pause container (its network namespace) stays while the plugins work');
      finish();
      await stopping;
      assert.deepEqual(f.docker.argsOf('stopContainer'), [[A_APP, 0], [POD_A, PAUSE_STOP_GRACE_SECONDS]]);
    });

    it('kills the pod when its network teardown fails, then passes the failure on', async () => {
      const cniDown = new UnavailableError('CNI plugin not initialized');
      f.network.failNextTearDown = cniDown;
      assert.equal(await failure(stop('aa')), cniDown);
      assert.deepEqual(f.docker.argsOf('stopContainer'), [[A_APP, 0], [POD_A, PAUSE_STOP_GRACE_SECONDS]]);
    });
  });

  describe('RemovePodSandbox', () => {
    const remove = (podSandboxId: string) => removePodSandbox(f.shim, { podSandboxId }, callContext('RemovePodSandbox'));

    it('removes the pod’s containers, its pause container and its checkpoint; a second call finds nothing', async () => {
      await remove('aa');
      assert.deepEqual(f.docker.argsOf('removeContainer').sort(), [[A_APP, REMOVE_QUERY], [POD_A, REMOVE_QUERY]].sort());
      assert.equal(await f.shim.checkpoints.read(POD_A), undefined);
      assert.deepEqual(f.network.calls, [{ step: 'tearDown', sandboxId: POD_A }]);
      await remove(POD_A);
      assert.equal(f.docker.argsOf('removeContainer').length, 2, 'nothing more removed');
    });

    it('removes the checkpoint while Docker still removes the containers', async () => {
      const slowDocker = f.docker.hold('removeContainer');
      const removed = remove('aa');
      await waitFor('the checkpoint file gone', () => !f.checkpointFiles().some((file) => file.startsWith(POD_A)), { timeoutMs: 2_000 });
      assert.equal(f.docker.argsOf('removeContainer').length, 2, 'both removals asked of Docker, neither answered');
      slowDocker.release();
      await removed;
      assert.equal(await f.shim.checkpoints.read(POD_A), undefined);
    });

    it('removes the checkpoint even when Docker fails to remove the pause container, and passes the failure on', async () => {
      const broken = new DockerServerError('driver failed to remove root filesystem', 500);
      f.docker.fail('removeContainer', { when: (id) => id === POD_A, error: broken });
      assert.equal(await failure(remove('aa')), broken);
      assert.equal(await f.shim.checkpoints.read(POD_A), undefined);
      assert.ok(f.docker.containers.has(POD_A), 'the pause container, with its labels, still names the pod');
    });

    it('removes the checkpoint of a pod whose pause container is gone', async () => {
      await remove('cc');
      assert.equal(await f.shim.checkpoints.read(GONE_C), undefined);
      assert.deepEqual(f.docker.argsOf('removeContainer'), []);
    });

    it('removes a pod without a checkpoint', async () => {
      await remove('dd');
      assert.equal(f.docker.containers.has(POD_D), false);
    });

    it('succeeds, removing nothing, for an ID that names no sandbox: unknown, a container’s, a UUID, a name', async () => {
      for (const id of ['ee', A_APP, 'bc', UUID_ID, 'web']) await remove(id);
      assert.deepEqual(f.docker.argsOf('removeContainer'), []);
      assert.equal(f.docker.containers.size, 5);
      assert.deepEqual((await f.shim.checkpoints.ids()).sort(), [POD_A, POD_B, GONE_C].sort());
    });

    it('refuses an ambiguous prefix and an empty ID (INVALID_ARGUMENT), removing nothing', async () => {
      await checkpoint(idWithPrefix('cc2', 'e'), {});
      assert.equal(await failureCode(remove('cc')), Code.INVALID_ARGUMENT);
      assert.equal(await failureCode(remove('')), Code.INVALID_ARGUMENT);
      assert.equal((await f.shim.checkpoints.ids()).length, 4);
    });

    it('removes nothing when the network cannot be released, and passes the failure on', async () => {
      const cniDown = new UnavailableError('CNI plugin not initialized');
      f.network.failNextTearDown = cniDown;
      assert.equal(await failure(remove('aa')), cniDown);
      assert.deepEqual(f.docker.argsOf('removeContainer'), []);
      assert.ok(await f.shim.checkpoints.read(POD_A));
    });
  });
  /** What CreateContainer asks Docker to make for one more container of pod A (its image made present). */
  const lateMember = () => {
    f.docker.addImage('busybox:1');
    return { name: 'k8s_late_web_default_uid-web_0', Image: 'busybox:1', Labels: { 'io.kubernetes.docker.type': 'container', 'io.kubernetes.sandbox.id': POD_A } };
  };

  describe('with the state cache synced', () => {
    it('Stop and RemovePodSandbox find the pod\'s containers in the cache: no Docker list', async () => {
      const cache = new DockerStateCache(f.docker, silentLogger());
      try {
        await cache.start();
        const shim = { ...f.shim, objects: new ShimObjectStore(f.docker, cache) };
        f.docker.calls.length = 0;
        await stopPodSandbox(shim, { podSandboxId: POD_A }, callContext('StopPodSandbox'));
        assert.deepEqual(f.docker.argsOf('stopContainer'), [[A_APP, 0], [POD_A, PAUSE_STOP_GRACE_SECONDS]]);
        await removePodSandbox(shim, { podSandboxId: POD_A }, callContext('RemovePodSandbox'));
        assert.deepEqual(f.docker.argsOf('removeContainer').sort(), [[A_APP, REMOVE_QUERY], [POD_A, REMOVE_QUERY]].sort());
        assert.deepEqual(f.docker.argsOf('listContainers'), [], 'the pod\'s containers came from the cache');
      } finally {
        await cache.stop();
      }
    });

    /**
     * Runs `call` on the shim behind its caching client over a started cache, with a container
     * of pod A created through it a moment before while Docker holds back every inspect: the
     * create's refresh is pending (no create event comes, so the cache inspects by itself), and
     * the fake starts it behind the cache's back, so the cache has applied neither. The
     * inspects are let go once the call asked Docker for the pod's containers, past the
     * catch-up wait. Answers the container's ID.
     */
    async function pastTheCatchUpWait(call: (shim: ShimContext) => Promise<unknown>): Promise<string> {
      const cache = new DockerStateCache(f.docker, silentLogger());
      await cache.start();
      const docker = new CachingDockerClient(f.docker, cache);
      const held = f.docker.hold('inspectContainer');
      try {
        const id = await docker.createContainer(lateMember());
        await f.docker.startContainer(id);
        f.docker.calls.length = 0;
        const calling = call({ ...f.shim, dockerCached: docker, objects: new ShimObjectStore(f.docker, cache) });
        await waitFor('the pod\'s containers asked of Docker', () => f.docker.argsOf('listContainers').length === 1, { timeoutMs: CATCH_UP_WAIT_MS + 3_000 });
        held.release();
        await calling;
        return id;
      } finally {
        held.release();
        await cache.stop();
      }
    }

    it('StopPodSandbox kills a container created and started a moment ago whose refresh is held past the catch-up wait: from Docker\'s list', async () => {
      const id = await pastTheCatchUpWait((shim) => stopPodSandbox(shim, { podSandboxId: POD_A }, callContext('StopPodSandbox')));
      assert.deepEqual(f.docker.argsOf('stopContainer').slice(0, 2).sort(), [[A_APP, 0], [id, 0]].sort());
      assert.equal(f.docker.containers.get(id)?.State.Running, false);
    });

    it('RemovePodSandbox removes a container created a moment ago whose refresh is held past the catch-up wait: from Docker\'s list', async () => {
      const id = await pastTheCatchUpWait((shim) => removePodSandbox(shim, { podSandboxId: POD_A }, callContext('RemovePodSandbox')));
      assert.deepEqual(f.docker.argsOf('removeContainer').sort(), [[A_APP, REMOVE_QUERY], [POD_A, REMOVE_QUERY], [id, REMOVE_QUERY]].sort());
      assert.equal(f.docker.containers.has(id), false);
    });
  });

  describe('with the state cache not synced', () => {
    it('Stop and RemovePodSandbox ask Docker for the pod\'s containers, one created a moment ago among them', async () => {
      // Never started: it vouches for nothing, so every query is Docker's list.
      const cache = new DockerStateCache(f.docker, silentLogger());
      const docker = new CachingDockerClient(f.docker, cache);
      const shim = { ...f.shim, docker, objects: new ShimObjectStore(f.docker, cache) };
      const id = await docker.createContainer(lateMember());
      await docker.startContainer(id);
      f.docker.calls.length = 0;
      await stopPodSandbox(shim, { podSandboxId: POD_A }, callContext('StopPodSandbox'));
      assert.deepEqual(f.docker.argsOf('stopContainer').sort(), [[A_APP, 0], [POD_A, PAUSE_STOP_GRACE_SECONDS], [id, 0]].sort());
      await removePodSandbox(shim, { podSandboxId: POD_A }, callContext('RemovePodSandbox'));
      assert.deepEqual(f.docker.argsOf('removeContainer').sort(), [[A_APP, REMOVE_QUERY], [POD_A, REMOVE_QUERY], [id, REMOVE_QUERY]].sort());
      const podList = { all: true, filters: { label: ['io.kubernetes.docker.type=container', `io.kubernetes.sandbox.id=${POD_A}`] } };
      assert.deepEqual(f.docker.argsOf('listContainers').filter(([q]) => JSON.stringify(q) === JSON.stringify(podList)).length, 2, 'one list of the pod\'s containers per call');
      await cache.stop();
    });
  });
});
