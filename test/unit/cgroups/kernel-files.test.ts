// KernelFiles: a file read through a kept descriptor shows its current contents, a broken
// descriptor falls back to the path, owners release what they hold, the cap is kept, missing
// files are quiet and other failures are reported, and a file missing on the host is skipped.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { heldFilesCap, KernelFiles } from '../../../src/cgroups/kernel-files';
import { tempDir } from '../../support/temp';

describe('KernelFiles', () => {
  const dir = tempDir('kernel-files');
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string): string => {
    const p = path.join(dir, name);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, text);
    return p;
  };

  it('keeps an owner\'s file open and reads it afresh from the start each time', () => {
    const files = new KernelFiles();
    const p = file('usage', '100\n');
    assert.equal(files.read(p, 'c1'), '100\n');
    assert.equal(files.count, 1);
    fs.writeFileSync(p, '250\n'); // same inode, rewritten in place, as the kernel renders a cgroup file
    assert.equal(files.read(p, 'c1'), '250\n');
    assert.equal(files.count, 1);
    files.closeAll();
    assert.equal(files.count, 0);
  });

  it('holds nothing for a read without an owner', () => {
    const files = new KernelFiles();
    assert.equal(files.read(file('plain', 'x')), 'x');
    assert.equal(files.count, 0);
  });

  it('answers undefined for a missing file without reporting it, and reports other failures', () => {
    const reported: string[] = [];
    const files = new KernelFiles((f, err) => reported.push(`${path.basename(f)} ${err.code}`));
    assert.equal(files.read(path.join(dir, 'absent'), 'c1'), undefined);
    assert.equal(files.count, 0);
    assert.deepEqual(reported, []);
    // A directory opens but cannot be read: EISDIR is not "absent".
    fs.mkdirSync(path.join(dir, 'a-dir'), { recursive: true });
    assert.equal(files.read(path.join(dir, 'a-dir'), 'c1'), undefined);
    assert.deepEqual(reported, ['a-dir EISDIR']);
    assert.equal(files.count, 0, 'a descriptor that could not be read is not kept');
  });

  it('releases an owner\'s files and leaves the others\'', () => {
    const files = new KernelFiles();
    files.read(file('a', 'a'), 'c1');
    files.read(file('b', 'b'), 'c1');
    files.read(file('c', 'c'), 'c2');
    assert.equal(files.count, 3);
    files.release('c1');
    assert.equal(files.count, 1);
    assert.deepEqual([...files.owners()], ['c2']);
    files.closeAll();
  });

  it('holds a quarter of the descriptor limit, within its floor and ceiling', () => {
    assert.equal(heldFilesCap(1024), 256);
    assert.equal(heldFilesCap(65_536), 16_384);
    assert.equal(heldFilesCap(1_048_576), 32_768);
    assert.equal(heldFilesCap(Infinity), 32_768);
    assert.equal(heldFilesCap(100), 64);
  });

  it('past its cap reads by path without holding, and reads large files whole', () => {
    const files = new KernelFiles(undefined, 1);
    files.read(file('one', '1'), 'c1');
    assert.equal(files.read(file('two', '2'), 'c1'), '2');
    assert.equal(files.count, 1);
    const big = 'x'.repeat(70 * 1024);
    assert.equal(files.read(file('big', big), 'c3'), big);
    files.closeAll();
  });

  it('skips a file missing from a live cgroup in the same hierarchy, and only that one', () => {
    const files = new KernelFiles();
    const hierarchy = path.join(dir, 'h');
    const cg1 = path.join(hierarchy, 'cg1');
    const cg2 = path.join(hierarchy, 'cg2');
    const gone = path.join(hierarchy, 'gone');
    file('h/cg1/present', 'p');
    file('h/cg1/cgroup.procs', '1\n');
    file('h/cg2/memory.memsw.usage_in_bytes', '5');
    // A cgroup without cgroup.procs is gone, not a sign of what the host lacks.
    assert.equal(files.hostFile(gone, 'memory.memsw.usage_in_bytes'), undefined);
    assert.equal(files.optional(cg2, 'memory.memsw.usage_in_bytes'), '5');
    assert.equal(files.hostFile(cg1, 'memory.memsw.usage_in_bytes'), undefined);
    // The absence is remembered for the hierarchy (the path's first levels), not one cgroup.
    const sameHierarchy = absentKeyShared(cg1, cg2);
    if (sameHierarchy) assert.equal(files.optional(cg2, 'memory.memsw.usage_in_bytes'), undefined);
    else assert.equal(files.optional(cg2, 'memory.memsw.usage_in_bytes'), '5');
    assert.equal(files.hostFile(cg1, 'present'), 'p', 'a file that was read is not marked');
    assert.equal(files.optional(cg1, 'present'), 'p');
    assert.equal(files.optional(undefined, 'present'), undefined);
  });
});

/** Whether two directories share their first four path levels (the hierarchy KernelFiles keys on). */
function absentKeyShared(a: string, b: string): boolean {
  const head = (p: string): string => p.split('/').slice(0, 5).join('/');
  return head(a) === head(b);
}
