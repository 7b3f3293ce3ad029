// The network host's running pods (src/network/docker-host.ts): the shim's pause containers that
// run, found through the store of the shim's objects: from the state cache while it is synced
// (no call to Docker), else one Docker list of running containers.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { DockerStateCache } from '../../../src/docker-cache/state-cache';
import { DockerNetworkHost } from '../../../src/network/docker-host';
import { ShimObjectStore } from '../../../src/object-store/object-store';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker } from '../../support/fake-docker';
import { inspectDoc, runningState } from '../../support/fixtures/docker-container';

const TYPE = 'io.kubernetes.docker.type';
const RUNNING_POD = 'a'.repeat(64);
const STOPPED_POD = 'b'.repeat(64);
const APP = 'c'.repeat(64);
const NOT_OURS = 'd'.repeat(64);

function fakeDocker(): FakeDocker {
  const docker = new FakeDocker();
  docker.addImage('busybox', { Id: 'sha256:1111' });
  const docs = [
    inspectDoc({ Id: RUNNING_POD, Name: '/k8s_POD_a', State: runningState(), Config: { Labels: { [TYPE]: 'podsandbox' } } }),
    inspectDoc({ Id: STOPPED_POD, Name: '/k8s_POD_b', State: { Status: 'exited' }, Config: { Labels: { [TYPE]: 'podsandbox' } } }),
    inspectDoc({ Id: APP, Name: '/k8s_app_a', State: runningState(), Config: { Labels: { [TYPE]: 'container', 'io.kubernetes.sandbox.id': RUNNING_POD } } }),
    inspectDoc({ Id: NOT_OURS, Name: '/web', State: runningState() }),
  ];
  for (const d of docs) docker.containers.set(d.Id, d);
  return docker;
}

describe('the network host’s running pods', () => {
  let cache: DockerStateCache | undefined;
  afterEach(async () => {
    await cache?.stop();
    cache = undefined;
  });

  it('are the running pause containers of the shim, from one Docker list without a state cache', async () => {
    const docker = fakeDocker();
    const host = new DockerNetworkHost(docker, new ShimObjectStore(docker), { peek: () => undefined });
    assert.deepEqual(await host.runningSandboxes(), [RUNNING_POD]);
    assert.deepEqual(docker.argsOf('listContainers'), [[{ all: false, filters: { label: [`${TYPE}=podsandbox`] } }]]);
  });

  it('come from the state cache while it is synced, without asking Docker', async () => {
    const docker = fakeDocker();
    cache = new DockerStateCache(docker, silentLogger());
    await cache.start();
    const host = new DockerNetworkHost(docker, new ShimObjectStore(docker, cache), { peek: () => undefined });
    docker.calls.length = 0;
    assert.deepEqual(await host.runningSandboxes(), [RUNNING_POD]);
    assert.deepEqual(docker.calls, []);
  });
});
