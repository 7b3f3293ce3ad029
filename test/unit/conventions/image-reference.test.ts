import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from '../../../src/errors';
import { checkLocalImageRef, isFullImageId, parseImageReference } from '../../../src/conventions/image-reference';

const DIGEST = 'sha256:5110c784f42c04f86ba6fa995f25ace9a8739118374fcc2de36586bd21b14214';

describe('parseImageReference', () => {
  it('fills in docker.io, library/ and latest', () => {
    const r = parseImageReference('busybox');
    assert.equal(r.repository, 'docker.io/library/busybox');
    assert.equal(r.pullRef, 'docker.io/library/busybox:latest');
    assert.equal(r.normalized, 'docker.io/library/busybox:latest');
    assert.equal(r.nameOnly, true);
    assert.equal(r.domain, 'docker.io');
  });

  it('keeps a user repository on docker.io and maps index.docker.io to docker.io', () => {
    assert.equal(parseImageReference('someone/tool:1.2').normalized, 'docker.io/someone/tool:1.2');
    assert.equal(parseImageReference('index.docker.io/library/busybox:1').normalized, 'docker.io/library/busybox:1');
  });

  it('recognises registry hosts by a dot, a port or localhost', () => {
    const withPort = parseImageReference('127.0.0.1:5000/team/app:v1');
    assert.equal(withPort.domain, '127.0.0.1:5000');
    assert.equal(withPort.path, 'team/app');
    assert.equal(withPort.tag, 'v1');
    assert.equal(parseImageReference('localhost/app').normalized, 'localhost/app:latest');
    assert.equal(parseImageReference('registry.k8s.io/pause:3.10').domain, 'registry.k8s.io');
  });

  it('keeps digests: pulls by digest, with or without a tag beside it', () => {
    const byDigest = parseImageReference(`127.0.0.1:5000/app@${DIGEST}`);
    assert.equal(byDigest.tag, undefined);
    assert.equal(byDigest.pullRef, `127.0.0.1:5000/app@${DIGEST}`);
    assert.equal(byDigest.nameOnly, false);
    const both = parseImageReference(`app:1@${DIGEST}`);
    assert.equal(both.pullRef, `docker.io/library/app@${DIGEST}`);
    assert.equal(both.normalized, `docker.io/library/app:1@${DIGEST}`);
  });

  it('refuses malformed references naming the field', () => {
    for (const bad of ['', 'BusyBox', 'app:bad tag', 'app@sha256:xyz', 'a//b', 'app:', '-app']) {
      assert.throws(() => parseImageReference(bad, 'image.image'), (err: unknown) => {
        assert.ok(err instanceof InvalidArgumentError, `${bad}: ${String(err)}`);
        assert.match(err.message, /image\.image/);
        return true;
      });
    }
  });
});

describe('image IDs', () => {
  it('tells full IDs apart and lets ID prefixes through for local lookups', () => {
    assert.equal(isFullImageId(DIGEST), true);
    assert.equal(isFullImageId(DIGEST.slice(7)), true);
    assert.equal(isFullImageId('5110c784f42c'), false);
    assert.equal(checkLocalImageRef(' 5110c784f42c '), '5110c784f42c');
    assert.equal(checkLocalImageRef('busybox:1'), 'busybox:1');
    assert.throws(() => checkLocalImageRef('Bad Name'), InvalidArgumentError);
  });
});
