// What RunPodSandbox and CreateContainer leave behind when a step fails, without Docker: the
// handlers run over the fake Docker and a context of the shim's real parts
// (test/support/fake-context.ts), and the call log shows exactly what they asked of Docker.
// RunPodSandbox promises that any failure after create removes the pause container and its
// checkpoint, and passes the failure on; CreateContainer, that a create abandoned mid-way
// (cancelled, timed out) removes whatever Docker made under the container's name.
import assert from 'node:assert/strict';
import { status as Code } from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { ContainerInspect } from '../../../src/docker/types';
import { CancelledError, DockerServerError, DockerTimeoutError, NotFoundError, toGrpcStatus, UnavailableError } from '../../../src/errors';
import { createContainer } from '../../../src/shim/container/create-container';
import { runPodSandbox } from '../../../src/shim/sandbox/run-pod-sandbox';
import { callContext, fakeShimContext, type FakeShim } from '../../support/fake-context';
import { waitFor } from '../../support/poll';
import { failure } from '../../support/rejection';
import { containerConfig, sandboxConfig } from '../../support/fixtures/cri';
import { sandboxCheckpoint } from '../../support/fixtures/checkpoint';
import { runningState, type DockerState } from '../../support/fixtures/docker-container';
import { exitedState } from '../../support/fixtures/shim-containers';

const REMOVE_QUERY = { force: true, removeVolumes: true };
const POD_NAME = 'k8s_POD_web_default_u-1_0';
const CONTAINER_NAME = 'k8s_app_web_default_u-1_2';

const runRequest = () => ({ config: sandboxConfig(), runtimeHandler: '' });

describe('RunPodSandbox rollback', () => {
  let f: FakeShim;
  beforeEach(async () => (f = await fakeShimContext()));
  afterEach(() => f.close());

  /** The pause container the handler created (the create call's answer). */
  const createdId = (): string => {
    const creates = f.docker.argsOf('createContainer');
    assert.equal(creates.length, 1, 'one create');
    assert.equal((creates[0]![0] as { name: string }).name, POD_NAME);
    const id = f.docker.calls.find((c) => c.method === 'inspectContainer')?.args[0];
    assert.equal(typeof id, 'string', 'the new container was inspected');
    return id as string;
  };

  /** Nothing of the pod is left: no container, no checkpoint in memory or on disk. */
  async function assertRolledBack(id: string): Promise<void> {
    assert.equal(f.docker.containers.size, 0, 'the pause container is gone');
    assert.deepEqual(f.docker.argsOf('removeContainer'), [[id, REMOVE_QUERY]], 'removed once, by ID, with force');
    assert.deepEqual(await f.shim.checkpoints.ids(), [], 'no checkpoint held');
    assert.deepEqual(f.checkpointFiles(), [], 'no checkpoint file (nor a temp file)');
  }

  it('runs the steps in order and keeps the container and checkpoint when all succeed', async () => {
    const { podSandboxId } = await runPodSandbox(f.shim, runRequest(), callContext('RunPodSandbox'));
    assert.deepEqual(f.docker.methods(), ['inspectImage', 'createContainer', 'inspectContainer', 'startContainer']);
    const id = createdId();
    assert.equal(podSandboxId, id);
    assert.equal(f.docker.containers.get(id)?.State.Running, true);
    assert.deepEqual(await f.shim.checkpoints.ids(), [id]);
    assert.deepEqual(f.checkpointFiles().sort(), [id, `${id}.json`], "ours and cri-dockerd's");
    assert.deepEqual(f.network.calls, [{ step: 'setUp', sandboxId: id }]);
  });

  it('removes the container and the checkpoint when start fails, and passes Docker’s error on (UNKNOWN)', async () => {
    const startFailed = new DockerServerError('OCI runtime create failed: runc create failed', 500);
    f.docker.fail('startContainer', { error: startFailed });
    const err = await failure(runPodSandbox(f.shim, runRequest(), callContext('RunPodSandbox')));
    assert.equal(err, startFailed);
    assert.equal(toGrpcStatus(err).code, Code.UNKNOWN);
    const id = createdId();
    assert.deepEqual(f.docker.methods(), ['inspectImage', 'createContainer', 'inspectContainer', 'startContainer', 'removeContainer']);
    await assertRolledBack(id);
    assert.deepEqual(f.network.calls, [], 'no network was set up, so none is torn down');
  });

  it('tears the network down and removes the running container and the checkpoint when network set-up fails (UNAVAILABLE)', async () => {
    f.network.failNextSetUp = new UnavailableError('network plugin: no IP addresses available in range');
    const err = await failure(runPodSandbox(f.shim, runRequest(), callContext('RunPodSandbox')));
    assert.ok(err instanceof UnavailableError);
    assert.equal(toGrpcStatus(err).code, Code.UNAVAILABLE);
    const id = createdId();
    assert.deepEqual(f.docker.methods(), ['inspectImage', 'createContainer', 'inspectContainer', 'startContainer', 'removeContainer']);
    assert.deepEqual(f.network.calls, [{ step: 'setUp', sandboxId: id }, { step: 'tearDown', sandboxId: id }]);
    await assertRolledBack(id);
  });

  it('leaves the pod NOTREADY, its pause stopped and its checkpoint kept, when the teardown after a failed set-up fails too', async () => {
    const setUpFailed = new UnavailableError('network plugin: bridge failed');
    f.network.failNextSetUp = setUpFailed;
    f.network.failNextTearDown = new UnavailableError('network plugin: IPAM is down');
    const err = await failure(runPodSandbox(f.shim, runRequest(), callContext('RunPodSandbox')));
    assert.equal(err, setUpFailed, 'the set-up failure is the answer');
    const id = createdId();
    assert.deepEqual(f.docker.methods(), ['inspectImage', 'createContainer', 'inspectContainer', 'startContainer', 'stopContainer']);
    assert.equal(f.docker.containers.get(id)?.State.Running, false, 'the pause container is stopped, not removed');
    assert.deepEqual(await f.shim.checkpoints.ids(), [id], 'the checkpoint stays for the later teardown');
    assert.deepEqual(f.network.calls, [{ step: 'setUp', sandboxId: id }, { step: 'tearDown', sandboxId: id }]);
  });

  it('removes the container, never started, when the checkpoint cannot be written (INTERNAL)', async () => {
    // A full disk is RESOURCE_EXHAUSTED (the real store's mapping; test/integration/hostile-answers.test.ts).
    f.checkpointStore.failNextWrite = Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' });
    const err = await failure(runPodSandbox(f.shim, runRequest(), callContext('RunPodSandbox')));
    assert.match(err.message, /EIO/);
    assert.equal(toGrpcStatus(err).code, Code.INTERNAL);
    const id = createdId();
    assert.deepEqual(f.docker.methods(), ['inspectImage', 'createContainer', 'inspectContainer', 'removeContainer']);
    await assertRolledBack(id);
    assert.deepEqual(f.network.calls, []);
  });

  it('still rolls back when the caller gives up during start: the clean-up does not carry the cancelled signal (CANCELLED)', async () => {
    f.docker.fail('startContainer', { hang: true });
    const caller = new AbortController();
    const running = failure(runPodSandbox(f.shim, runRequest(), callContext('RunPodSandbox', caller)));
    await waitFor('the start call', () => f.docker.methods().includes('startContainer'));
    caller.abort(new CancelledError('the client cancelled the call'));
    const err = await running;
    assert.ok(err instanceof CancelledError);
    assert.equal(toGrpcStatus(err).code, Code.CANCELLED);
    const id = createdId();
    await assertRolledBack(id);
    const remove = f.docker.calls.find((c) => c.method === 'removeContainer');
    assert.equal(remove?.signal, undefined, 'the removal is not bound to the cancelled call');
  });
});

describe('RunPodSandbox over a name already in use', () => {
  let f: FakeShim;
  beforeEach(async () => (f = await fakeShimContext()));
  afterEach(() => f.close());

  const run = () => runPodSandbox(f.shim, runRequest(), callContext('RunPodSandbox'));
  const holder = (labels: Record<string, string>, state: Partial<DockerState> = runningState()) => f.docker.addContainer({ Name: `/${POD_NAME}`, State: state, Config: { Labels: labels } });
  const SANDBOX = { 'io.kubernetes.docker.type': 'podsandbox' };
  /** The one query for the name (no state cache here: one Docker list, narrowed to the name). */
  const NAME_LIST = [[{ all: true, filters: { label: ['io.kubernetes.docker.type'], name: [`^/${POD_NAME}$`] } }]];

  it('removes a stopped sandbox of its own under that name, with its checkpoint, and creates the pod', async () => {
    const stale = holder(SANDBOX, exitedState(0));
    await f.shim.checkpoints.write(sandboxCheckpoint({ id: stale.Id, labels: {}, hostNetwork: false }));
    const { podSandboxId } = await run();
    assert.notEqual(podSandboxId, stale.Id);
    assert.deepEqual(f.docker.argsOf('listContainers'), NAME_LIST);
    assert.deepEqual(f.docker.argsOf('removeContainer'), [[stale.Id, REMOVE_QUERY]]);
    assert.deepEqual(await f.shim.checkpoints.ids(), [podSandboxId]);
    assert.equal(f.docker.byName(POD_NAME)?.Id, podSandboxId);
  });

  it('refuses a running sandbox under that name (ALREADY_EXISTS naming it), removing nothing', async () => {
    const live = holder(SANDBOX);
    const err = await failure(run());
    assert.equal(toGrpcStatus(err).code, Code.ALREADY_EXISTS);
    assert.match(err.message, new RegExp(`already in use by running sandbox ${live.Id}`));
    assert.deepEqual(f.docker.argsOf('removeContainer'), []);
  });

  it('leaves a container the shim did not make to Docker: the create is tried again, and its refusal names the holder', async () => {
    const foreign = holder({});
    const err = await failure(run());
    assert.equal(toGrpcStatus(err).code, Code.ALREADY_EXISTS);
    assert.match(err.message, new RegExp(foreign.Id));
    assert.equal(f.docker.argsOf('createContainer').length, 2);
    assert.deepEqual(f.docker.argsOf('removeContainer'), []);
    assert.ok(f.docker.containers.has(foreign.Id));
  });
});

describe('CreateContainer rollback', () => {
  let f: FakeShim;
  let sandbox: ContainerInspect;
  beforeEach(async () => {
    f = await fakeShimContext();
    sandbox = f.docker.addContainer({ Name: `/${POD_NAME}`, State: runningState(), Config: { Labels: { 'io.kubernetes.docker.type': 'podsandbox' } } });
    f.docker.addImage('busybox:1');
  });
  afterEach(() => f.close());

  const request = () => ({ podSandboxId: sandbox.Id, config: containerConfig(), sandboxConfig: sandboxConfig() });
  const CREATE_STEPS = ['listContainers', 'inspectImage', 'createContainer'];

  /** Only the sandbox is left, and the abandoned create was followed by one removal by name. */
  function assertRemovedByName(): void {
    assert.deepEqual(f.docker.methods(), [...CREATE_STEPS, 'removeContainer']);
    assert.equal((f.docker.argsOf('createContainer')[0]![0] as { name: string }).name, CONTAINER_NAME);
    assert.deepEqual(f.docker.argsOf('removeContainer'), [[CONTAINER_NAME, REMOVE_QUERY]]);
    assert.deepEqual([...f.docker.containers.keys()], [sandbox.Id], 'only the sandbox is left');
  }

  it('creates the container under dockershim’s name when all goes well', async () => {
    const { containerId } = await createContainer(f.shim, request(), callContext('CreateContainer'));
    assert.deepEqual(f.docker.methods(), CREATE_STEPS);
    assert.equal(f.docker.byName(CONTAINER_NAME)?.Id, containerId);
  });

  it('removes by name what Docker made when the caller cancels the create (CANCELLED)', async () => {
    // Docker makes the container, but the answer never comes before the caller gives up.
    f.docker.fail('createContainer', { hang: true, afterEffect: true });
    const caller = new AbortController();
    const creating = failure(createContainer(f.shim, request(), callContext('CreateContainer', caller)));
    await waitFor('the create call', () => f.docker.byName(CONTAINER_NAME));
    caller.abort(new CancelledError('the client cancelled the call'));
    const err = await creating;
    assert.ok(err instanceof CancelledError);
    assert.equal(toGrpcStatus(err).code, Code.CANCELLED);
    assertRemovedByName();
    const remove = f.docker.calls.find((c) => c.method === 'removeContainer');
    assert.equal(remove?.signal, undefined, 'the removal is not bound to the cancelled call');
  });

  it('removes by name what Docker made when the create times out (DEADLINE_EXCEEDED)', async () => {
    f.docker.fail('createContainer', { afterEffect: true, error: new DockerTimeoutError('Docker did not answer create container within 2s') });
    const err = await failure(createContainer(f.shim, request(), callContext('CreateContainer')));
    assert.ok(err instanceof DockerTimeoutError);
    assert.equal(toGrpcStatus(err).code, Code.DEADLINE_EXCEEDED);
    assertRemovedByName();
  });

  it('still answers DEADLINE_EXCEEDED when the timed-out create made nothing (the removal finds nothing)', async () => {
    f.docker.fail('createContainer', { error: new DockerTimeoutError('Docker did not answer create container within 2s') });
    const err = await failure(createContainer(f.shim, request(), callContext('CreateContainer')));
    assert.equal(toGrpcStatus(err).code, Code.DEADLINE_EXCEEDED);
    assertRemovedByName();
  });

  it('answers NOT_FOUND and creates nothing when the image is missing', async () => {
    const err = await failure(createContainer(f.shim, { ...request(), config: containerConfig({ image: { image: 'absent:1', annotations: {}, userSpecifiedImage: '', runtimeHandler: '', imageRef: '' } }) }, callContext('CreateContainer')));
    assert.ok(err instanceof NotFoundError);
    assert.equal(toGrpcStatus(err).code, Code.NOT_FOUND);
    assert.match(err.message, /absent:1.*pull it first/);
    assert.deepEqual(f.docker.callLines().slice(1), ['inspectImage absent:1'], 'the image looked up, nothing created');
    assert.deepEqual([...f.docker.containers.keys()], [sandbox.Id]);
  });
});
