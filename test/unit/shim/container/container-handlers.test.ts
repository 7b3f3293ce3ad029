// ListContainers, ContainerStatus, StopContainer and RemoveContainer over the fake Docker
// (test/support/fake-context.ts): which of the shim's containers an ID or a filter names (a
// unique prefix, an ambiguous one, none; UUID-shaped and other non-hex IDs; a pod's ID where a
// container's belongs; Docker's containers the shim did not make), what each call answers for
// them (NOT_FOUND, INVALID_ARGUMENT, or success for Stop and Remove of what is not there), and
// what it asked of Docker.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { status as Code } from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { ContainerFilter__Output, ContainerState__Output } from '../../../../src/cri/types';
import { DockerNotFoundError, DockerServerError } from '../../../../src/errors';
import { containerStatus } from '../../../../src/shim/container/container-status';
import { listContainers } from '../../../../src/shim/container/list-containers';
import { removeContainer } from '../../../../src/shim/container/remove-container';
import { startContainer } from '../../../../src/shim/container/start-container';
import { stopContainer } from '../../../../src/shim/container/stop-container';
import { callContext, fakeShimContext, type FakeShim } from '../../../support/fake-context';
import { waitFor } from '../../../support/poll';
import { failure, failureCode } from '../../../support/rejection';
import { MAX_REQUESTED_WAIT_SECONDS } from '../../../../src/util/timer-delay';
import { dockerState } from '../../../support/fixtures/docker-container';
import { addPauseContainer, addPodContainer, exitedState, idWithPrefix, UUID_ID } from '../../../support/fixtures/shim-containers';

const POD_A = idWithPrefix('aa00', 'a');
const POD_B = idWithPrefix('bb00', 'b');
/** Three containers: two share the prefix `c1`, one of them is A's and stopped. */
const C1_RUNNING = idWithPrefix('c1a', '1');
const C1_EXITED = idWithPrefix('c1b', '2');
const C2_CREATED = idWithPrefix('c2', '3');
/** A Docker container the shim did not make (no type label). */
const FOREIGN = idWithPrefix('c3', '4');

const listOf = async (f: FakeShim, filter: Partial<ContainerFilter__Output> | null): Promise<string[]> => {
  const full = filter && { id: '', state: null, podSandboxId: '', labelSelector: {}, ...filter };
  const { containers } = await listContainers(f.shim, { filter: full }, callContext('ListContainers'));
  return (containers ?? []).map((c) => c.id ?? '').sort();
};
const state = (s: ContainerState__Output) => ({ state: s });

describe('container handlers over the fake Docker', () => {
  let f: FakeShim;
  beforeEach(async () => {
    f = await fakeShimContext();
    addPauseContainer(f.docker, POD_A, { labels: { app: 'a' } });
    addPauseContainer(f.docker, POD_B, { name: 'db' });
    addPodContainer(f.docker, C1_RUNNING, POD_A, { labels: { app: 'a', tier: 'front' }, annotations: { tier: 'back' } });
    addPodContainer(f.docker, C1_EXITED, POD_A, { labels: { app: 'a', tier: 'back' }, state: exitedState(1), name: 'init' });
    addPodContainer(f.docker, C2_CREATED, POD_B, { state: {}, name: 'db' });
    f.docker.addContainer({ Id: FOREIGN, Name: '/someone-elses' });
  });
  afterEach(() => f.close());

  describe('ListContainers', () => {
    it('lists the shim’s containers only: no pause containers, no containers it did not make', async () => {
      assert.deepEqual(await listOf(f, null), [C1_RUNNING, C1_EXITED, C2_CREATED].sort());
      assert.deepEqual(await listOf(f, {}), [C1_RUNNING, C1_EXITED, C2_CREATED].sort(), 'an empty filter is no filter');
    });

    it('takes the ID as a prefix: unique, shared by two, whole, or naming nothing', async () => {
      assert.deepEqual(await listOf(f, { id: 'c2' }), [C2_CREATED]);
      assert.deepEqual(await listOf(f, { id: 'c1' }), [C1_RUNNING, C1_EXITED].sort(), 'a list answers every match of a shared prefix');
      assert.deepEqual(await listOf(f, { id: C1_EXITED }), [C1_EXITED]);
      assert.deepEqual(await listOf(f, { id: 'c3' }), [], 'a container the shim did not make');
      assert.deepEqual(await listOf(f, { id: 'aa00' }), [], 'a pod’s ID names no container');
      assert.deepEqual(await listOf(f, { id: 'ffff' }), []);
    });

    it('answers nothing for an ID that is not hex (a UUID, a name), without asking Docker', async () => {
      for (const id of [UUID_ID, 'C1A', 'app', 'c1a-']) {
        assert.deepEqual(await listOf(f, { id }), [], id);
      }
      assert.deepEqual(f.docker.methods(), [], 'no list call');
    });

    it('filters by CRI state', async () => {
      assert.deepEqual(await listOf(f, { state: state('CONTAINER_RUNNING') }), [C1_RUNNING]);
      assert.deepEqual(await listOf(f, { state: state('CONTAINER_EXITED') }), [C1_EXITED]);
      assert.deepEqual(await listOf(f, { state: state('CONTAINER_CREATED') }), [C2_CREATED]);
      assert.deepEqual(await listOf(f, { state: state('CONTAINER_UNKNOWN') }), []);
      const [running] = f.docker.argsOf('listContainers');
      assert.equal((running![0] as { all: boolean }).all, false, 'RUNNING asks Docker for running containers only');
    });

    it('filters by the pod sandbox ID, whole or as a prefix; a non-hex one names no pod', async () => {
      assert.deepEqual(await listOf(f, { podSandboxId: POD_A }), [C1_RUNNING, C1_EXITED].sort());
      assert.deepEqual(await listOf(f, { podSandboxId: 'bb' }), [C2_CREATED]);
      assert.deepEqual(await listOf(f, { podSandboxId: 'cc' }), []);
      assert.deepEqual(await listOf(f, { podSandboxId: UUID_ID }), []);
    });

    it('filters by label selector: every pair must hold, among labels and not annotations', async () => {
      assert.deepEqual(await listOf(f, { labelSelector: { app: 'a' } }), [C1_RUNNING, C1_EXITED].sort());
      assert.deepEqual(await listOf(f, { labelSelector: { app: 'a', tier: 'front' } }), [C1_RUNNING]);
      assert.deepEqual(await listOf(f, { labelSelector: { app: 'a', tier: 'none' } }), []);
      assert.deepEqual(await listOf(f, { labelSelector: { tier: 'back' } }), [C1_EXITED], 'an annotation of the same key is not a label');
    });

    it('combines every part of the filter', async () => {
      assert.deepEqual(await listOf(f, { id: 'c1', podSandboxId: 'aa', state: state('CONTAINER_EXITED'), labelSelector: { app: 'a' } }), [C1_EXITED]);
      assert.deepEqual(await listOf(f, { id: 'c2', podSandboxId: 'aa' }), []);
    });
  });

  describe('ContainerStatus', () => {
    const status = (containerId: string) => containerStatus(f.shim, { containerId, verbose: false }, callContext('ContainerStatus'));

    it('answers for a unique prefix with the full ID', async () => {
      const { status: s } = await status('c1a');
      assert.equal(s?.id, C1_RUNNING);
      assert.equal(s?.state, 'CONTAINER_RUNNING');
      assert.deepEqual(f.docker.argsOf('inspectContainer'), [[C1_RUNNING]], 'inspected by the full ID');
    });

    it('refuses a prefix two containers share (INVALID_ARGUMENT)', async () => {
      assert.equal(await failureCode(status('c1')), Code.INVALID_ARGUMENT);
      assert.deepEqual(f.docker.argsOf('inspectContainer'), [], 'nothing inspected');
    });

    it('answers NOT_FOUND for an ID that names none of the shim’s containers', async () => {
      for (const id of ['ffff', idWithPrefix('ff'), POD_A, 'c3', FOREIGN]) {
        assert.equal(await failureCode(status(id)), Code.NOT_FOUND, id);
      }
    });

    it('answers INVALID_ARGUMENT for an ID that cannot be one (empty, a UUID, upper case, too long), without asking Docker', async () => {
      for (const id of ['', UUID_ID, C1_RUNNING.toUpperCase(), `${C1_RUNNING}0`]) {
        assert.equal(await failureCode(status(id)), Code.INVALID_ARGUMENT, id);
      }
      assert.deepEqual(f.docker.methods(), []);
    });

    it('answers NOT_FOUND when the container goes between the lookup and the inspect', async () => {
      f.docker.fail('inspectContainer', { error: new DockerNotFoundError(`No such container: ${C2_CREATED}`) });
      assert.equal(await failureCode(status('c2')), Code.NOT_FOUND);
    });
  });

  describe('StartContainer', () => {
    const start = (containerId: string) => startContainer(f.shim, { containerId }, callContext('StartContainer'));
    const planted = () => path.join(f.rootDir, 'planted', 'appended-by-root.log');
    const hostileImage = () => f.docker.addImage('hostile:1', { Config: { Labels: { 'io.kubernetes.container.logpath': planted() } } } as never);

    it("writes to no log its image's label names, and asks no image, for a container the shim recorded", async () => {
      const image = hostileImage();
      const id = idWithPrefix('d1');
      const doc = addPodContainer(f.docker, id, POD_A, { state: {} });
      // What Docker shows: the image's label merged in beside the shim's record (which lacks it).
      doc.Config.Labels = { ...image.Config.Labels, ...doc.Config.Labels };
      doc.Image = image.Id;
      await start(id);
      assert.deepEqual(f.docker.argsOf('startContainer').map((a) => a[0]), [id]);
      assert.equal(fs.existsSync(planted()), false);
      assert.deepEqual(f.docker.argsOf('inspectImage'), []);
    });

    it("takes an unrecorded container's log path equal to its image's for the image's, and writes none", async () => {
      const image = hostileImage();
      const id = idWithPrefix('d2');
      f.docker.addContainer({
        Id: id,
        Name: '/k8s_app_web_default_uid-web_0',
        Image: image.Id,
        State: dockerState(),
        Config: { Image: 'hostile:1', Labels: { 'io.kubernetes.docker.type': 'container', 'io.kubernetes.sandbox.id': POD_A, ...image.Config.Labels } },
      });
      await start(id);
      assert.deepEqual(f.docker.argsOf('startContainer').map((a) => a[0]), [id]);
      assert.equal(fs.existsSync(planted()), false);
      assert.equal(f.docker.argsOf('inspectImage').length, 1);
    });
  });

  describe('StopContainer', () => {
    const stop = (containerId: string, timeout = '10') => stopContainer(f.shim, { containerId, timeout }, callContext('StopContainer'));

    it('stops the container a unique prefix names, by its full ID, with the timeout given', async () => {
      await stop('c1a', '7');
      assert.deepEqual(f.docker.argsOf('stopContainer'), [[C1_RUNNING, 7]]);
      assert.equal(f.docker.containers.get(C1_RUNNING)?.State.Running, false);
    });

    it('clamps a timeout of years (up to int64’s largest) to the longest wait a timer holds', async () => {
      await stop('c1a', '907189589');
      await stop(C1_EXITED, '9223372036854775807');
      assert.deepEqual(f.docker.argsOf('stopContainer'), [
        [C1_RUNNING, MAX_REQUESTED_WAIT_SECONDS],
        [C1_EXITED, MAX_REQUESTED_WAIT_SECONDS],
      ]);
    });

    it('succeeds for a container already stopped, and for one stopped twice', async () => {
      await stop(C1_EXITED);
      await stop('c1a');
      await stop('c1a');
      assert.equal(f.docker.containers.get(C1_RUNNING)?.State.Running, false);
    });

    it('succeeds, doing nothing, for an ID that names nothing of the shim’s: unknown, a pod’s, a foreign container’s', async () => {
      for (const id of ['ffff', idWithPrefix('ff'), POD_A, FOREIGN]) await stop(id);
      assert.deepEqual(f.docker.argsOf('stopContainer'), [], 'nothing stopped');
      assert.equal(f.docker.containers.get(POD_A)?.State.Running, true, 'the pod still runs');
      assert.equal(f.docker.containers.get(FOREIGN)?.State.Status, 'created');
    });

    it('succeeds for a UUID or a name (kubelet and critest send them) without asking Docker', async () => {
      for (const id of [UUID_ID, 'app', C1_RUNNING.toUpperCase()]) await stop(id);
      assert.deepEqual(f.docker.methods(), []);
    });

    it('succeeds when the container goes between the lookup and the stop', async () => {
      f.docker.fail('stopContainer', { error: new DockerNotFoundError(`No such container: ${C1_RUNNING}`) });
      await stop('c1a');
    });

    it('refuses an ambiguous prefix, an empty ID and a bad timeout (INVALID_ARGUMENT), stopping nothing', async () => {
      assert.equal(await failureCode(stop('c1')), Code.INVALID_ARGUMENT);
      assert.equal(await failureCode(stop('')), Code.INVALID_ARGUMENT);
      assert.equal(await failureCode(stop('c1a', '-1')), Code.INVALID_ARGUMENT);
      assert.deepEqual(f.docker.argsOf('stopContainer'), []);
    });

    it('passes Docker’s other failures on', async () => {
      const broken = new DockerServerError('cannot stop container: permission denied', 500);
      f.docker.fail('stopContainer', { error: broken });
      assert.equal(await failure(stop('c1a')), broken);
    });
  });

  describe('RemoveContainer', () => {
    const remove = (containerId: string) => removeContainer(f.shim, { containerId }, callContext('RemoveContainer'));

    it('force-removes the container a unique prefix names, running or not', async () => {
      await remove('c1a');
      await remove(C1_EXITED);
      assert.deepEqual(f.docker.argsOf('removeContainer'), [
        [C1_RUNNING, { force: true, removeVolumes: true }],
        [C1_EXITED, { force: true, removeVolumes: true }],
      ]);
      assert.deepEqual([...f.docker.containers.keys()].sort(), [POD_A, POD_B, C2_CREATED, FOREIGN].sort());
    });

    it('succeeds for a container already removed (the second of two calls)', async () => {
      await remove(C2_CREATED);
      await remove(C2_CREATED);
      assert.equal(f.docker.argsOf('removeContainer').length, 1, 'the second call finds nothing to remove');
    });

    it('removes nothing for an ID that names nothing of the shim’s: unknown, a pod’s, a foreign container’s', async () => {
      for (const id of ['ffff', POD_B, 'bb', FOREIGN, 'c3']) await remove(id);
      assert.deepEqual(f.docker.argsOf('removeContainer'), []);
      assert.equal(f.docker.containers.size, 6, 'every container is still there');
    });

    it('succeeds for a UUID or a name without asking Docker', async () => {
      for (const id of [UUID_ID, 'app']) await remove(id);
      assert.deepEqual(f.docker.methods(), []);
    });

    it('succeeds when the container goes between the lookup and the remove', async () => {
      f.docker.fail('removeContainer', { error: new DockerNotFoundError(`No such container: ${C1_RUNNING}`) });
      await remove('c1a');
    });

    it('refuses an ambiguous prefix and an empty ID (INVALID_ARGUMENT), removing nothing', async () => {
      assert.equal(await failureCode(remove('c1')), Code.INVALID_ARGUMENT);
      assert.equal(await failureCode(remove('')), Code.INVALID_ARGUMENT);
      assert.deepEqual(f.docker.argsOf('removeContainer'), []);
    });

    it('passes Docker’s other failures on', async () => {
      const broken = new DockerServerError('driver failed to remove root filesystem', 500);
      f.docker.fail('removeContainer', { error: broken });
      assert.equal(await failure(remove('c1a')), broken);
      assert.ok(f.docker.containers.has(C1_RUNNING));
    });

    it('asks Docker to remove while the log follower is still ending, and answers once both are done', async () => {
      let followerEnded: () => void = () => undefined;
      const forgotten: string[] = [];
      f.shim.logs.forget = (id: string) => {
        forgotten.push(id);
        return new Promise<void>((resolve) => (followerEnded = resolve));
      };
      let answered = false;
      const removed = remove('c1a').then(() => (answered = true));
      await waitFor('the removal asked of Docker', () => f.docker.argsOf('removeContainer').length === 1, { timeoutMs: 2_000 });
      assert.deepEqual(forgotten, [C1_RUNNING], 'the follower was told to end first');
      assert.equal(f.docker.containers.has(C1_RUNNING), false);
      assert.equal(answered, false, 'no answer before the follower has ended');
      followerEnded();
      await removed;
    });
  });
});
