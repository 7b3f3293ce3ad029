// HeldFiles: a file read through a kept descriptor shows its current contents, a broken
// descriptor falls back to the path, owners release what they hold, and the cap is kept.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { HeldFiles } from '../../src/pod-metrics/held-files';
import { tempDir } from '../support/temp';

describe('HeldFiles', () => {
  const dir = tempDir('held-files');
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string): string => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, text);
    return p;
  };

  it('keeps the file open and reads it afresh from the start each time', () => {
    const held = new HeldFiles();
    const p = file('usage', '100\n');
    assert.equal(held.read('c1', p), '100\n');
    assert.equal(held.count, 1);
    fs.writeFileSync(p, '250\n'); // same inode, rewritten in place, as the kernel renders a cgroup file
    assert.equal(held.read('c1', p), '250\n');
    assert.equal(held.count, 1);
    held.closeAll();
    assert.equal(held.count, 0);
  });

  it('throws ENOENT for a missing file and holds nothing for it', () => {
    const held = new HeldFiles();
    assert.throws(() => held.read('c1', path.join(dir, 'absent')), { code: 'ENOENT' });
    assert.equal(held.count, 0);
  });

  it('releases an owner\'s files and leaves the others\'', () => {
    const held = new HeldFiles();
    held.read('c1', file('a', 'a'));
    held.read('c1', file('b', 'b'));
    held.read('c2', file('c', 'c'));
    assert.equal(held.count, 3);
    held.release('c1');
    assert.equal(held.count, 1);
    assert.deepEqual([...held.owners()], ['c2']);
    held.closeAll();
  });

  it('past its cap reads by path without holding, and reads large files whole', () => {
    const held = new HeldFiles(1);
    held.read('c1', file('one', '1'));
    assert.equal(held.read('c1', file('two', '2')), '2');
    assert.equal(held.count, 1);
    const big = 'x'.repeat(70 * 1024);
    assert.equal(held.read('c3', file('big', big)), big);
    held.closeAll();
  });
});
