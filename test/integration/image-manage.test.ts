// ListImages, StreamImages, ImageStatus and RemoveImage through the real shim,
// on images this file makes (unique content, so no other test shares them).
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { describe, it } from 'node:test';
import { rejectsWith } from '../support/client';
import { testLabels } from '../support/cleanup';
import { dockerApi, TEST_BUSYBOX_IMAGE, TEST_PAUSE_IMAGE, testImageStore } from '../support/images';
import { importUniqueImage, pushTwoPlatformIndex } from '../support/registry';
import { useShim } from '../support/fixture';

describe('image management', () => {
  const f = useShim();
  const { run } = f;
  const repo = `cds-test-manage/${run}`;
  const docker = dockerApi();

  async function makeImage(tag: string, changes: string[] = []): Promise<string> {
    const id = await importUniqueImage(`${repo}:${tag}`, changes);
    f.removeImagesAfter([id], { force: true });
    return id;
  }

  it('ImageStatus reports tags, size and a numeric user as uid', async () => {
    const id = await makeImage('uid', ['USER 1234:1234']);
    const res = await f.client.images.ImageStatus({ image: { image: `${repo}:uid` } });
    assert.equal(res.image?.id, id);
    assert.deepEqual(res.image?.repoTags, [`${repo}:uid`]);
    // An imported image has no digest on a graph driver; on the containerd store its ID is its
    // manifest's digest, which Docker gives as a digest of its name.
    const store = (await testImageStore()).kind;
    assert.deepEqual(res.image?.repoDigests, store === 'containerd' ? [`${repo}@${id}`] : []);
    assert.equal(res.image?.uid?.value, '1234');
    assert.equal(res.image?.username, '');
    // The size Docker lists (on the containerd store its blobs and its unpacked snapshot; the
    // inspect counts only the blobs there), and the same in ListImages.
    const size = Number(res.image?.size);
    assert.equal(size, (await docker.listImages()).find((i) => i.Id === id)?.Size);
    const listed = await f.client.images.ListImages({ filter: { image: { image: `${repo}:uid` } } });
    assert.deepEqual(listed.images.map((i) => [i.id, i.size, i.repoDigests]), [[id, res.image?.size, res.image?.repoDigests]]);
    assert.ok(size >= 64 * 1024, `size ${size} holds the 64 KiB file`);
    assert.equal(res.image?.pinned, false);
    assert.deepEqual(res.info, {});
  });

  it('ImageStatus reports a named user as username, by ID too, and verbose adds the config', async () => {
    const id = await makeImage('named', ['USER tester']);
    const res = await f.client.images.ImageStatus({ image: { image: id }, verbose: true });
    assert.equal(res.image?.id, id);
    assert.equal(res.image?.username, 'tester');
    assert.equal(res.image?.uid, null);
    const info = JSON.parse(res.info.info!) as { id: string; config: { User: string } };
    assert.equal(info.id, id);
    assert.equal(info.config.User, 'tester');
  });

  it('ImageStatus of a missing image is an empty answer, not an error', async () => {
    const res = await f.client.images.ImageStatus({ image: { image: `${repo}:never-made` } });
    assert.equal(res.image, null);
  });

  it('the sandbox image is pinned', async () => {
    const res = await f.client.images.ImageStatus({ image: { image: TEST_PAUSE_IMAGE } });
    assert.equal(res.image?.pinned, true);
    const listed = await f.client.images.ListImages({ filter: { image: { image: TEST_PAUSE_IMAGE } } });
    assert.equal(listed.images.length, 1);
    assert.equal(listed.images[0]!.pinned, true);
  });

  it('ListImages lists what Docker has, and the filter narrows it', async () => {
    const id = await makeImage('listed');
    const all = await f.client.images.ListImages({});
    const ids = all.images.map((i) => i.id);
    assert.ok(ids.includes(id));
    assert.ok(all.images.some((i) => i.repoTags.includes(TEST_BUSYBOX_IMAGE)));
    const dockerIds = (await docker.listImages()).map((i) => i.Id);
    for (const mine of [id]) assert.ok(dockerIds.includes(mine));
    const one = await f.client.images.ListImages({ filter: { image: { image: `${repo}:listed` } } });
    assert.deepEqual(one.images.map((i) => i.id), [id]);
    assert.deepEqual(one.images[0]!.repoTags, [`${repo}:listed`]);
    const byId = await f.client.images.ListImages({ filter: { image: { image: id.slice(7, 19) } } });
    assert.deepEqual(byId.images.map((i) => i.id), [id]);
  });

  it('StreamImages sends the same images as ListImages', async () => {
    const filter = { image: { image: repo } };
    const listed = await f.client.images.ListImages({ filter });
    const streamed = (await f.client.images.StreamImages({ filter })).flatMap((m) => m.images);
    assert.ok(listed.images.length >= 1);
    assert.deepEqual(streamed.map((i) => i.id).sort(), listed.images.map((i) => i.id).sort());
  });

  it('RemoveImage by tag removes only that tag; by ID removes every tag; gone is success', async () => {
    const id = await makeImage('one');
    await docker.getImage(id).tag({ repo, tag: 'two' });
    await f.client.images.RemoveImage({ image: { image: `${repo}:one` } });
    assert.deepEqual((await docker.getImage(id).inspect()).RepoTags, [`${repo}:two`]);
    await docker.getImage(id).tag({ repo: `${repo}-other`, tag: 'three' });
    await f.client.images.RemoveImage({ image: { image: id } });
    await assert.rejects(docker.getImage(id).inspect(), 'the image is gone with all its tags');
    await f.client.images.RemoveImage({ image: { image: id } });
    await f.client.images.RemoveImage({ image: { image: `${repo}:two` } });
  });

  it('five RemoveImage calls of one image at once all succeed, by ID and by tag, and each leaves it gone', async () => {
    // Docker 20.10 answers the removals that lose the race 404 ("reference does not exist", "No
    // such image") or 500 "unrecognized image ID", the first while the winner is still deleting
    // the image; each round is a new race, so a "gone" answer taken for a failure, or one taken
    // for the image being gone already, shows in one of them. As critest's "should not fail on
    // simultaneous RemoveImage calls": each call is followed at once by ImageStatus.
    const rounds = [1, 2, 3, 4, 5, 6, 7, 8].map((round) => [round, round < 8] as const);
    for (const [round, byId] of rounds) {
      const tag = `race${round}`;
      const made = await docker.createContainer({ Image: TEST_BUSYBOX_IMAGE, Cmd: ['true'], Labels: testLabels(run) });
      const { Id: id } = (await made.commit({ repo, tag })) as { Id: string };
      await made.remove();
      f.removeImagesAfter([id], { force: true });
      // By ID, a second name, as a pulled image has (its tag and its digest): Docker removes the
      // names first and the image last, and a loser's 404 comes in between.
      if (byId) await docker.getImage(id).tag({ repo: `${repo}-other`, tag });
      const image = byId ? id : `${repo}:${tag}`;
      assert.ok((await f.client.images.ImageStatus({ image: { image } })).image, `round ${round}: the shim sees the image first`);
      const results = await Promise.allSettled(
        Array.from({ length: 5 }, async () => {
          await f.client.images.RemoveImage({ image: { image } });
          return (await f.client.images.ImageStatus({ image: { image } })).image;
        }),
      );
      assert.deepEqual(results.filter((r) => r.status === 'rejected'), [], `round ${round}: every call succeeds`);
      assert.deepEqual(
        results.map((r) => (r.status === 'fulfilled' ? r.value : 'rejected')),
        [null, null, null, null, null],
        `round ${round}: ImageStatus right after each RemoveImage finds nothing`,
      );
      await assert.rejects(docker.getImage(id).inspect(), `round ${round}: the image is gone`);
    }
  });

  it('RemoveImage of an image a container uses is FAILED_PRECONDITION and removes nothing', async () => {
    const id = await makeImage('used');
    await docker.getImage(id).tag({ repo, tag: 'used-too' });
    const c = await docker.createContainer({ Image: id, Cmd: ['/random.bin'], Labels: testLabels(run) });
    try {
      await assert.rejects(
        f.client.images.RemoveImage({ image: { image: id } }),
        rejectsWith(status.FAILED_PRECONDITION, new RegExp(`in use by container\\(s\\) ${c.id.slice(0, 12)}`)),
      );
      assert.deepEqual((await docker.getImage(id).inspect()).RepoTags.sort(), [`${repo}:used`, `${repo}:used-too`]);
      await f.client.images.RemoveImage({ image: { image: `${repo}:used` } }); // another tag remains: just untagged
      await assert.rejects(f.client.images.RemoveImage({ image: { image: `${repo}:used-too` } }), rejectsWith(status.FAILED_PRECONDITION, /in use/));
      assert.deepEqual((await docker.getImage(id).inspect()).RepoTags, [`${repo}:used-too`]);
    } finally {
      await c.remove({ force: true });
    }
  });

  it('a multi-platform image: pulled by its index, the same ID in status and list, removed by tag and by ID', async () => {
    // The containerd store keeps the index (its ID is the index's digest, the host's platform
    // unpacked); a graph driver keeps the host's platform only (its config's digest).
    const registry = await f.startRegistry();
    const name = `multi-${run}`;
    await makeImage('multi');
    await registry.push(`${repo}:multi`, `${name}:amd64`);
    const index = await pushTwoPlatformIndex(registry, name, 'amd64', 'both');
    await docker.getImage(`${repo}:multi`).remove({ force: true });
    const auth = { username: registry.username, password: registry.password };
    for (const by of ['tag', 'id'] as const) {
      const id = (await f.client.images.PullImage({ image: { image: index.ref }, auth })).imageRef;
      f.removeImagesAfter([id], { force: true });
      const status = (await f.client.images.ImageStatus({ image: { image: index.ref } })).image;
      assert.equal(status?.id, id);
      assert.ok(status?.repoDigests.includes(index.digestRef), `${status?.repoDigests} has ${index.digestRef}`);
      const listed = await f.client.images.ListImages({ filter: { image: { image: index.ref } } });
      assert.deepEqual(listed.images.map((i) => [i.id, i.size]), [[id, status?.size]]);
      await f.client.images.RemoveImage({ image: { image: by === 'tag' ? index.ref : id } });
      assert.equal((await f.client.images.ImageStatus({ image: { image: index.ref } })).image, null, `by ${by}: the tag is gone`);
      if (by === 'id') await assert.rejects(docker.getImage(id).inspect(), 'by ID: the image is gone');
    }
  });

  it('RemoveImage refuses a malformed reference', async () => {
    await assert.rejects(f.client.images.RemoveImage({ image: { image: 'No Such/Image' } }), rejectsWith(status.INVALID_ARGUMENT, /image\.image/));
  });
});
