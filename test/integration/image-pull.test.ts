// PullImage against a real private registry (htpasswd auth) through the real shim: by tag, by
// digest, without a tag, with each form of request auth, refused without credentials, and
// cancelled by the progress deadline when the registry stalls.
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { before, describe, it } from 'node:test';
import { rejectsWith } from '../support/client';
import { waitFor } from '../support/poll';
import { dockerApi, TEST_BUSYBOX_IMAGE } from '../support/images';
import { useShim } from '../support/fixture';
import { startStallingProxy, type PushedImage } from '../support/registry';

describe('PullImage from a private registry', () => {
  const f = useShim({ registry: true });
  let busy: PushedImage;
  let uniq: PushedImage;
  let uniqId: string;
  const docker = dockerApi();

  before(async () => {
    busy = await f.registry.push(TEST_BUSYBOX_IMAGE, 'busy:1');
    await f.registry.push(TEST_BUSYBOX_IMAGE, 'busy:latest');
    f.removeImagesAfter([busy.ref, `${f.registry.host}/busy:latest`]);
    ({ id: uniqId, pushed: uniq } = await f.registryOnlyImage(f.registry, 'uniq:1'));
  });

  const auth = (): { username: string; password: string } => ({ username: f.registry.username, password: f.registry.password });

  it('pulls by tag with username and password, answering the image ID', async () => {
    const res = await f.client.images.PullImage({ image: { image: uniq.ref }, auth: auth() });
    assert.equal(res.imageRef, uniqId, 'the ref kubelet gets is the image ID');
    const inspected = await docker.getImage(uniq.ref).inspect();
    assert.equal(inspected.Id, uniqId);
    assert.ok(inspected.RepoDigests.includes(uniq.digestRef), `${inspected.RepoDigests} has ${uniq.digestRef}`);
  });

  it('logs what the pull fetched: the bytes the stream counted, the layers it finished without a size, and the image\'s size', async () => {
    // A new pull of the unique image (its one layer is nowhere else on the host).
    await docker.getImage(uniqId).remove({ force: true });
    await f.client.images.PullImage({ image: { image: uniq.ref }, auth: auth() });
    const line = await waitFor('the pull\'s summary in the log', () =>
      f.shim
        .output()
        .split('\n')
        .filter((l) => l.includes('"pulled image"') && l.includes(uniq.ref.split('/')[1]!))
        .map((l) => JSON.parse(l) as { layers: number; layersDone: number; downloadedBytes: number; layersUncounted?: number; imageBytes?: number })
        .at(-1),
    );
    assert.ok(line.layers >= 1 && line.layersDone === line.layers, JSON.stringify(line));
    // Docker 20.10 counts each layer's bytes; the containerd store finishes a fast pull's layers without.
    assert.ok(line.downloadedBytes >= 64 * 1024 || (line.layersUncounted ?? 0) >= 1, `bytes counted, or layers said uncounted: ${JSON.stringify(line)}`);
    assert.ok((line.imageBytes ?? 0) >= 64 * 1024, `the image's bytes: ${JSON.stringify(line)}`);
  });

  it('pulls by digest with the combined auth field', async () => {
    await docker.getImage(uniqId).remove({ force: true });
    const encoded = Buffer.from(`${f.registry.username}:${f.registry.password}`).toString('base64');
    const res = await f.client.images.PullImage({ image: { image: uniq.digestRef }, auth: { auth: encoded } });
    assert.equal(res.imageRef, uniqId);
    const status = await f.client.images.ImageStatus({ image: { image: uniq.digestRef } });
    assert.equal(status.image?.id, uniqId);
    assert.deepEqual(status.image?.repoDigests, [uniq.digestRef]);
  });

  it('pulls a name without a tag as :latest, not every tag', async () => {
    const name = `${f.registry.host}/busy`;
    const res = await f.client.images.PullImage({ image: { image: name }, auth: auth() });
    const latest = await docker.getImage(`${name}:latest`).inspect();
    assert.equal(res.imageRef, latest.Id);
    await assert.rejects(docker.getImage(busy.ref).inspect(), 'busy:1 was not pulled along');
  });

  it('is refused without credentials, and with wrong ones, as UNAUTHENTICATED', async () => {
    await assert.rejects(
      f.client.images.PullImage({ image: { image: busy.ref } }),
      rejectsWith(status.UNAUTHENTICATED, /pulling image ".*busy:1": the registry refused the credentials/),
    );
    await assert.rejects(
      f.client.images.PullImage({ image: { image: busy.ref }, auth: { username: f.registry.username, password: 'wrong-password' } }),
      rejectsWith(status.UNAUTHENTICATED, /busy:1/),
    );
  });

  it('a missing tag or repository is NOT_FOUND', async () => {
    await assert.rejects(
      f.client.images.PullImage({ image: { image: `${f.registry.host}/busy:nope` }, auth: auth() }),
      rejectsWith(status.NOT_FOUND, /busy:nope.*not found/),
    );
    await assert.rejects(
      f.client.images.PullImage({ image: { image: `${f.registry.host}/nothing-here:1` }, auth: auth() }),
      rejectsWith(status.NOT_FOUND, /nothing-here:1/),
    );
  });

  it('a malformed reference or auth is INVALID_ARGUMENT naming the field', async () => {
    await assert.rejects(f.client.images.PullImage({ image: { image: 'Bad Ref' } }), rejectsWith(status.INVALID_ARGUMENT, /image\.image/));
    await assert.rejects(
      f.client.images.PullImage({ image: { image: busy.ref }, auth: { auth: 'not base64!' } }),
      rejectsWith(status.INVALID_ARGUMENT, /auth\.auth is not base64/),
    );
  });

  it('removes a pulled image by digest', async () => {
    await f.client.images.PullImage({ image: { image: uniq.ref }, auth: auth() });
    await f.client.images.RemoveImage({ image: { image: uniq.digestRef } });
    const after = await docker.getImage(uniqId).inspect().catch(() => undefined);
    assert.ok(!after || !after.RepoDigests.includes(uniq.digestRef), 'the digest reference is gone');
  });

  it('never logs the registry password', () => {
    assert.ok(f.shim.output().includes('PullImage'), 'the shim logged the calls');
    assert.ok(!f.shim.output().includes(f.registry.password), 'password absent from the shim log');
  });
});

describe('PullImage from a registry that stalls', () => {
  const f = useShim({ registry: true, args: ['--image-pull-progress-deadline=2s'] });
  let name: string;
  const docker = dockerApi();

  before(async () => {
    await f.registryOnlyImage(f.registry, 'stall:1');
    const proxy = await startStallingProxy(f.registry.host);
    f.onCleanUp(() => proxy.stop());
    name = `${proxy.host}/stall:1`;
  });

  it('is cancelled with DEADLINE_EXCEEDED naming the image when no progress arrives', async () => {
    await assert.rejects(
      f.client.images.PullImage({ image: { image: name }, auth: { username: f.registry.username, password: f.registry.password } }),
      rejectsWith(status.DEADLINE_EXCEEDED, /pulling image ".*stall:1": no progress for 2s \(--image-pull-progress-deadline\)/),
    );
    await assert.rejects(docker.getImage(name).inspect(), 'nothing was pulled');
  });

  it('honours the request deadline', async () => {
    await assert.rejects(
      f.client.images.PullImage(
        { image: { image: name }, auth: { username: f.registry.username, password: f.registry.password } },
        { deadline: Date.now() + 1000 },
      ),
      rejectsWith(status.DEADLINE_EXCEEDED),
    );
    // The client gives up by itself at its deadline; the shim must also stop its pull then.
    await waitFor('the shim to cancel the pull at the request deadline', () => f.shim.output().includes("the request's deadline passed"));
  });
});
