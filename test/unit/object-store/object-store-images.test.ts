// The store's image part: the same query answered from one Docker image list and, while the
// state cache is synced, from the list the cache keeps, without asking Docker.
import { strict as assert } from 'node:assert';
import { afterEach, describe, it } from 'node:test';
import { DockerStateCache } from '../../../src/docker-cache/state-cache';
import { ShimObjectStore } from '../../../src/object-store/object-store';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker } from '../../support/fake-docker';

function withImages(): { docker: FakeDocker; busybox: string; app: string } {
  const docker = new FakeDocker();
  const busybox = docker.addImage('busybox:1.36').Id;
  const app = docker.addImage('127.0.0.1:5000/team/app:v1').Id;
  return { docker, busybox, app };
}

describe("the store's images", () => {
  let cache: DockerStateCache | undefined;
  afterEach(async () => {
    await cache?.stop();
    cache = undefined;
  });

  it("are Docker's top-level images with digests, narrowed by the query, without a state cache", async () => {
    const { docker, busybox, app } = withImages();
    const store = new ShimObjectStore(docker);
    assert.deepEqual((await store.list({ kind: 'image' })).map((i) => i.Id).sort(), [busybox, app].sort());
    assert.deepEqual((await store.list({ kind: 'image', image: 'docker.io/library/busybox' })).map((i) => i.Id), [busybox]);
    assert.deepEqual((await store.list({ kind: 'image', image: app.slice('sha256:'.length, 19) })).map((i) => i.Id), [app]);
    assert.deepEqual(await store.list({ kind: 'image', image: 'busybox:latest' }), []);
    assert.deepEqual(docker.argsOf('listImages'), Array(4).fill([{ all: false, digests: true }]));
  });

  it('come from the state cache while it is synced', async () => {
    const { docker, busybox } = withImages();
    cache = new DockerStateCache(docker, silentLogger());
    await cache.start();
    const store = new ShimObjectStore(docker, cache);
    assert.deepEqual((await store.list({ kind: 'image', image: 'busybox:1.36' })).map((i) => i.Id), [busybox]);
    docker.calls.length = 0;
    assert.deepEqual((await store.list({ kind: 'image', image: 'busybox' })).map((i) => i.Id), [busybox]);
    assert.deepEqual(docker.argsOf('listImages'), [], 'the cache kept the list');
  });

  it("that containers use are found in Docker's own list, the shim's or not, even while the state cache is synced", async () => {
    const { docker, busybox, app } = withImages();
    const users = [docker.addContainer({ Image: busybox }), docker.addContainer({ Image: busybox, State: { Running: true } })];
    docker.addContainer({ Image: app });
    cache = new DockerStateCache(docker, silentLogger());
    await cache.start();
    const store = new ShimObjectStore(docker, cache);
    docker.calls.length = 0;
    assert.deepEqual((await store.containersUsingImage(busybox)).sort(), users.map((c) => c.Id).sort());
    assert.deepEqual(await store.containersUsingImage('sha256:unused'), []);
    assert.deepEqual(docker.argsOf('listContainers'), [[{ all: true }], [{ all: true }]]);
  });
});
