// The storage walk over trees made here: hard links counted once, as du -x counts them, while
// only the inodes with more than one link are remembered (not one entry per file); a tree
// deeper than the directories one walk holds open, walked whole with at most that many open.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { diskUsage, LinkedInodes, MAX_OPEN_DIRS } from '../../../src/util/disk-usage';
import { tempDir } from '../../support/temp';

/** du -x's figures for `dir`: bytes of allocated blocks, and inodes. */
function du(dir: string): { bytes: number; inodes: number } {
  const kib = Number(execFileSync('du', ['-xsk', dir], { encoding: 'utf8' }).split('\t')[0]);
  const inodes = Number(execFileSync('du', ['-xs', '--inodes', dir], { encoding: 'utf8' }).split('\t')[0]);
  return { bytes: kib * 1024, inodes };
}

describe('disk usage walk', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
  const tree = (): string => {
    const dir = tempDir('du');
    dirs.push(dir);
    return dir;
  };

  it('counts a hard-linked file once, and remembers only the inodes with more than one link', async () => {
    const root = tree();
    fs.mkdirSync(path.join(root, 'a', 'b'), { recursive: true });
    for (let i = 0; i < 50; i++) fs.writeFileSync(path.join(root, 'a', `single-${i}`), 'x'.repeat(5000));
    fs.writeFileSync(path.join(root, 'a', 'shared'), 'y'.repeat(20_000));
    fs.linkSync(path.join(root, 'a', 'shared'), path.join(root, 'a', 'b', 'again'));
    fs.linkSync(path.join(root, 'a', 'shared'), path.join(root, 'third'));
    const linked = new LinkedInodes();
    const usage = await diskUsage([root], { linked });
    assert.deepEqual(usage, du(root));
    assert.equal(usage.inodes, 3 + 50 + 1, 'three directories, fifty files, the shared one once');
    assert.equal(linked.size, 1, 'only the hard-linked inode is remembered');
  });

  it(`walks a tree deeper than ${MAX_OPEN_DIRS} directories whole, holding at most ${MAX_OPEN_DIRS} open`, async () => {
    const root = tree();
    let deepest = root;
    for (let depth = 0; depth < 3 * MAX_OPEN_DIRS; depth++) {
      deepest = path.join(deepest, 'd');
      fs.mkdirSync(deepest);
      fs.writeFileSync(path.join(deepest, 'f'), 'z');
      if (depth % 5 === 0) fs.mkdirSync(path.join(deepest, 'side'));
    }
    const openDirs = (): number => fs.readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(root);
      } catch {
        return false;
      }
    }).length;
    let most = 0;
    const usage = await diskUsage([root], { pace: () => void (most = Math.max(most, openDirs())) });
    assert.deepEqual(usage, du(root));
    assert.ok(most > 0, 'directories are read through an open handle');
    assert.ok(most <= MAX_OPEN_DIRS, `${most} directories open at once`);
  });
});
