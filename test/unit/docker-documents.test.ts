// Readings of Docker documents whose shape differs between API 1.41 and 1.51 (and on to 1.52,
// so the next engine reads alike too), over the shapes each engine gives.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { writableLayerDir } from '../../src/docker/documents';
import { inspectDoc } from './fixtures-docker-container';

const UPPER = '/var/lib/docker/overlay2/4f1c0e8a/diff';

describe('writableLayerDir', () => {
  it('reads overlay2 UpperDir (graph drivers, Docker 20.10 to 28)', () => {
    const doc = inspectDoc({
      GraphDriver: {
        Name: 'overlay2',
        Data: { LowerDir: '/var/lib/docker/overlay2/4f1c0e8a-init/diff', MergedDir: '/var/lib/docker/overlay2/4f1c0e8a/merged', UpperDir: UPPER, WorkDir: '/var/lib/docker/overlay2/4f1c0e8a/work' },
      },
    });
    assert.equal(writableLayerDir(doc), UPPER);
  });

  it('gives none for the containerd image store: Data null up to API 1.51, GraphDriver left out from 1.52', () => {
    assert.equal(writableLayerDir(inspectDoc({ GraphDriver: { Name: 'overlayfs', Data: null } })), undefined);
    const doc = inspectDoc({ Storage: { RootFS: { Snapshot: { Name: 'overlayfs' } } } });
    assert.equal('GraphDriver' in doc, false);
    assert.equal(writableLayerDir(doc), undefined);
    assert.equal(writableLayerDir(inspectDoc({ GraphDriver: null })), undefined);
  });

  it('gives none for a driver without an upper directory, or a path that is not absolute', () => {
    assert.equal(writableLayerDir(inspectDoc({ GraphDriver: { Name: 'vfs', Data: {} } })), undefined);
    assert.equal(writableLayerDir(inspectDoc({ GraphDriver: { Name: 'overlay2', Data: { UpperDir: '' } } })), undefined);
    assert.equal(writableLayerDir(inspectDoc({ GraphDriver: { Name: 'overlay2', Data: { UpperDir: 'overlay2/x/diff' } } })), undefined);
  });
});
