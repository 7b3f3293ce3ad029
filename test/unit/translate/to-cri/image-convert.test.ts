import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ImageInspect, ImageSummary } from '../../../../src/docker/types';
import { imageConfigOf, imageFromInspect, imageFromSummary, imageUser, verboseImageInfo } from '../../../../src/translate/to-cri/image-convert';
import { IMAGE_INSPECT_1_41, IMAGE_INSPECT_1_51, IMAGE_LISTED_1_41, IMAGE_LISTED_1_51 } from '../../../support/fixtures/docker-image';

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

  it('takes as a uid only ASCII digits in Docker\'s range, untrimmed; anything else is a name kubelet cannot verify', () => {
    // Docker looks each of these up as a name in the image's /etc/passwd (root in a hostile image).
    for (const user of ['1000\uFEFF', ' 1000', '1000 ', '+1000', '-0', '18446744073709552616', '9223372036854775808', '4294967296', '2147483648', '\u0661\u0660']) {
      assert.deepEqual(imageUser(user), { username: user }, JSON.stringify(user));
      assert.deepEqual(imageUser(`${user}:0`), { username: user }, JSON.stringify(user));
    }
    assert.deepEqual(imageUser('2147483647'), { uid: { value: '2147483647' }, username: '' });
    assert.deepEqual(imageUser('0001000'), { uid: { value: '1000' }, username: '' });
    assert.deepEqual(imageUser(':1000'), { username: '' });
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

describe('an image as Docker 20.10 (API 1.41) and Docker 28 (API 1.51) document it', () => {
  it('is the same CRI image from either inspect', () => {
    assert.deepEqual(imageFromInspect(IMAGE_INSPECT_1_41, false), imageFromInspect(IMAGE_INSPECT_1_51, false));
    assert.equal(imageFromInspect(IMAGE_INSPECT_1_51, false).size, '4261550', 'Size, not the VirtualSize 1.44 dropped');
  });

  it('is the same CRI image from either list entry (placeholders, Containers -1 before 1.51)', () => {
    const a = imageFromSummary(IMAGE_LISTED_1_41, false);
    assert.deepEqual(a, imageFromSummary(IMAGE_LISTED_1_51, false));
    assert.deepEqual(a.repoTags, []);
    assert.equal(a.size, '4261550');
  });

  it('gives the same verbose info: the image config alone, without 1.41\'s container fields or empty values', () => {
    const a = JSON.parse(verboseImageInfo(IMAGE_INSPECT_1_41).info!) as Record<string, unknown>;
    assert.deepEqual(a, JSON.parse(verboseImageInfo(IMAGE_INSPECT_1_51).info!));
    assert.deepEqual(a.config, { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], Cmd: ['sh'] });
    assert.equal(a.created, '2024-09-26T21:31:42.095698862Z');
  });

  it('leaves out a creation time Docker does not know (the zero time up to 1.43, absent from 1.44)', () => {
    const zero = JSON.parse(verboseImageInfo({ ...IMAGE_INSPECT_1_41, Created: '0001-01-01T00:00:00Z' }).info!) as Record<string, unknown>;
    const absent = JSON.parse(verboseImageInfo({ ...IMAGE_INSPECT_1_51, Created: undefined as unknown as string }).info!) as Record<string, unknown>;
    assert.equal('created' in zero, false);
    assert.deepEqual(zero, absent);
  });

  it('keeps every set image config field', () => {
    const config = { User: '1000:1000', ExposedPorts: { '80/tcp': {} }, Env: ['A=1'], Entrypoint: ['/e'], Cmd: ['c'], Volumes: { '/v': {} }, WorkingDir: '/w', Labels: { l: 'v' }, StopSignal: 'SIGQUIT', Shell: ['/bin/sh', '-c'], Hostname: 'h', Image: 'sha256:0f' };
    const { Hostname: _h, Image: _i, ...imageFields } = config;
    assert.deepEqual(imageConfigOf(config as unknown as ImageInspect['Config']), imageFields);
    assert.deepEqual(imageConfigOf(undefined), {});
  });
});
