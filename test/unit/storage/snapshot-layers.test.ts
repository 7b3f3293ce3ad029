// Reading a container's snapshot on Docker's containerd image store: its root mount's upperdir,
// under the snapshotter's numbered snapshot directories, and nothing else.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { containerSnapshotDir, listSnapshotDirs, rootOverlayUpperDir, snapshotDirOf } from '../../../src/storage/snapshot-layers';
import { tempDir } from '../../support/temp';

const SNAP = '/var/lib/docker-28c/containerd/daemon/io.containerd.snapshotter.v1.overlayfs';
// The first lines of a container's mountinfo on Docker 28.5 with the containerd store.
const MOUNTINFO = [
  `74 48 0:39 / / rw,relatime - overlay overlay rw,lowerdir=${SNAP}/snapshots/5/fs:${SNAP}/snapshots/1/fs,upperdir=${SNAP}/snapshots/6/fs,workdir=${SNAP}/snapshots/6/work`,
  '75 74 0:41 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw',
  '',
].join('\n');

describe('containerd snapshots', () => {
  it('reads the root overlay\'s upperdir, the runtime\'s (first) mount at "/" only', () => {
    assert.equal(rootOverlayUpperDir(MOUNTINFO), `${SNAP}/snapshots/6/fs`);
    const stacked = `${MOUNTINFO}90 74 0:50 / / rw - overlay overlay rw,lowerdir=/x,upperdir=/tmp/evil/fs,workdir=/tmp/w\n`;
    assert.equal(rootOverlayUpperDir(stacked), `${SNAP}/snapshots/6/fs`, 'a later mount over / is not the layer');
    assert.equal(rootOverlayUpperDir('74 48 0:39 / / rw - ext4 /dev/sda1 rw\n'), undefined, 'not an overlay');
    assert.equal(rootOverlayUpperDir('74 48 0:39 / / rw shared:1 - overlay overlay rw,upperdir=/a\\040b/fs\n'), '/a b/fs', 'optional fields, escapes');
    assert.equal(rootOverlayUpperDir(''), undefined);
  });

  it('takes only <snapshotter>/snapshots/<n>/fs', () => {
    assert.equal(snapshotDirOf(`${SNAP}/snapshots/6/fs`, SNAP), `${SNAP}/snapshots/6`);
    assert.equal(snapshotDirOf(`${SNAP}/snapshots/6/fs/x`, SNAP), undefined);
    assert.equal(snapshotDirOf(`${SNAP}/snapshots/../../etc/fs`, SNAP), undefined);
    assert.equal(snapshotDirOf('/var/lib/docker/overlay2/abc/diff', SNAP), undefined);
  });

  it('finds a process\'s snapshot from its mountinfo, and lists the snapshot directories', () => {
    const root = tempDir('snapshots');
    try {
      fs.mkdirSync(path.join(root, 'proc', '77'), { recursive: true });
      fs.writeFileSync(path.join(root, 'proc', '77', 'mountinfo'), MOUNTINFO);
      assert.equal(containerSnapshotDir(77, SNAP, path.join(root, 'proc')), `${SNAP}/snapshots/6`);
      assert.equal(containerSnapshotDir(78, SNAP, path.join(root, 'proc')), undefined, 'gone');
      assert.equal(containerSnapshotDir(0, SNAP, path.join(root, 'proc')), undefined);
      for (const name of ['1', '12', 'new-123', 'x']) fs.mkdirSync(path.join(root, 'snap', 'snapshots', name), { recursive: true });
      assert.deepEqual(listSnapshotDirs(path.join(root, 'snap')).sort(), [path.join(root, 'snap', 'snapshots', '1'), path.join(root, 'snap', 'snapshots', '12')]);
      assert.deepEqual(listSnapshotDirs(path.join(root, 'none')), []);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
