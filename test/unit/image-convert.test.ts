import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ImageInspect, ImageSummary } from '../../src/docker/types';
import { imageFromInspect, imageFromSummary, imageUser, verboseImageInfo } from '../../src/shim/image/convert';

function inspected(over: Partial<ImageInspect> & { user?: string }): ImageInspect {
  return {
    Id: 'sha256:abc',
    RepoTags: ['busybox:latest', '<none>:<none>'],
    RepoDigests: ['busybox@sha256:def', '<none>@<none>'],
    Size: 1234,
    Created: '2026-01-01T00:00:00Z',
    Architecture: 'amd64',
    Os: 'linux',
    Config: { User: over.user ?? '', Env: ['PATH=/bin'], Cmd: ['sh'] },
    RootFS: { Type: 'layers', Layers: ['sha256:l1'] },
    ...over,
  } as unknown as ImageInspect;
}

describe('imageUser', () => {
  it('gives a numeric user as uid and a named one as username, ignoring the group', () => {
    assert.deepEqual(imageUser('1234'), { uid: { value: '1234' }, username: '' });
    assert.deepEqual(imageUser('1234:1234'), { uid: { value: '1234' }, username: '' });
    assert.deepEqual(imageUser('0'), { uid: { value: '0' }, username: '' });
    assert.deepEqual(imageUser('tester:staff'), { username: 'tester' });
    assert.deepEqual(imageUser(''), { username: '' });
    assert.deepEqual(imageUser(undefined), { username: '' });
  });
});

describe('imageFromInspect', () => {
  it('reports id, real tags and digests, size, user and the pinned flag', () => {
    const img = imageFromInspect(inspected({ user: '1234' }), true);
    assert.equal(img.id, 'sha256:abc');
    assert.deepEqual(img.repoTags, ['busybox:latest']);
    assert.deepEqual(img.repoDigests, ['busybox@sha256:def']);
    assert.equal(img.size, '1234');
    assert.deepEqual(img.uid, { value: '1234' });
    assert.equal(img.pinned, true);
    assert.equal(img.spec?.image, 'sha256:abc');
  });

  it('treats missing tag and digest lists as empty', () => {
    const img = imageFromInspect(inspected({ RepoTags: null as unknown as string[], RepoDigests: undefined as unknown as string[] }), false);
    assert.deepEqual(img.repoTags, []);
    assert.deepEqual(img.repoDigests, []);
    assert.equal(img.pinned, false);
  });

  it('verbose info holds the image config as JSON', () => {
    const info = verboseImageInfo(inspected({ user: 'tester' }));
    const parsed = JSON.parse(info.info!) as { config: { User: string; Cmd: string[] }; os: string };
    assert.equal(parsed.config.User, 'tester');
    assert.deepEqual(parsed.config.Cmd, ['sh']);
    assert.equal(parsed.os, 'linux');
  });
});

describe('imageFromSummary', () => {
  it('reports a listed image without <none> placeholders', () => {
    const s = { Id: 'sha256:x', RepoTags: ['<none>:<none>'], RepoDigests: ['a@sha256:1'], Size: 7 } as unknown as ImageSummary;
    const img = imageFromSummary(s, false);
    assert.deepEqual(img.repoTags, []);
    assert.deepEqual(img.repoDigests, ['a@sha256:1']);
    assert.equal(img.size, '7');
  });
});
