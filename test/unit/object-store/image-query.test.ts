import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchesImageQuery, namesImageById } from '../../../src/object-store/image-query';

const ID = 'sha256:4411f0e602250000000000000000000000000000000000000000000000000000';
const image = {
  Id: ID,
  RepoTags: ['busybox:1.36', '127.0.0.1:5000/team/app:v1'],
  RepoDigests: ['127.0.0.1:5000/team/app@sha256:5110c784f42c04f86ba6fa995f25ace9a8739118374fcc2de36586bd21b14214'],
};
const imageMatchesFilter = (i: typeof image, wanted: string): boolean => matchesImageQuery(i, { kind: 'image', image: wanted });

describe('matchesImageQuery', () => {
  it('no filter keeps everything', () => {
    assert.equal(imageMatchesFilter(image, ''), true);
    assert.equal(matchesImageQuery({ Id: ID, RepoTags: [], RepoDigests: [] }, { kind: 'image' }), true, 'an untagged image too');
  });
  it('matches by ID and ID prefix', () => {
    assert.equal(imageMatchesFilter(image, ID), true);
    assert.equal(imageMatchesFilter(image, '4411f0e60225'), true);
    assert.equal(imageMatchesFilter(image, '9999'), false);
  });
  it('matches a name (any tag), name:tag in any spelling, and name@digest', () => {
    assert.equal(imageMatchesFilter(image, 'busybox'), true);
    assert.equal(imageMatchesFilter(image, 'docker.io/library/busybox:1.36'), true);
    assert.equal(imageMatchesFilter(image, 'busybox:latest'), false);
    assert.equal(imageMatchesFilter(image, '127.0.0.1:5000/team/app:v1'), true);
    assert.equal(imageMatchesFilter(image, '127.0.0.1:5000/team/app@sha256:5110c784f42c04f86ba6fa995f25ace9a8739118374fcc2de36586bd21b14214'), true);
    assert.equal(imageMatchesFilter(image, '127.0.0.1:5000/team/other'), false);
  });
});

describe('namesImageById', () => {
  it('is true only for the ID or a prefix of it', () => {
    assert.equal(namesImageById(ID, ID), true);
    assert.equal(namesImageById(ID.slice(7), ID), true);
    assert.equal(namesImageById('4411f0e6', ID), true);
    assert.equal(namesImageById('busybox:1.36', ID), false);
    assert.equal(namesImageById('deadbeef', ID), false);
  });
});
