import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { CheckpointCache } from '../../../src/checkpoint/checkpoint-cache';
import { encodeCheckpoint, type SandboxCheckpoint } from '../../../src/checkpoint/checkpoint';
import { CheckpointFiles } from '../../../src/checkpoint/checkpoint-files';
import { InvalidArgumentError } from '../../../src/errors';
import { silentLogger } from '../../../src/util/logger';
import { sandboxCheckpoint } from '../../support/fixtures/checkpoint';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);

const sample = (id: string): SandboxCheckpoint => sandboxCheckpoint({ id });

describe('checkpoints held in memory', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-checkpoint-cache-'));
  after(() => fs.rmSync(root, { recursive: true, force: true }));
  const dir = path.join(root, 'sandbox');

  it('loads valid checkpoints once, dropping corrupt ones, then reads no files', async () => {
    const store = new CheckpointFiles(root, silentLogger());
    await store.write(sample(A));
    fs.writeFileSync(path.join(dir, `${B}.json`), '{"version":"v1",');
    const cache = new CheckpointCache(store);
    assert.deepEqual((await cache.readAll()).map((c) => c.id), [A]);
    assert.equal(fs.existsSync(path.join(dir, `${B}.json`)), false, 'the corrupt file is removed on load');

    // A file appearing later is not read: the cache is the shim's own record.
    fs.writeFileSync(path.join(dir, `${C}.json`), encodeCheckpoint(sample(C)));
    assert.deepEqual(await cache.ids(), [A]);
    assert.equal(await cache.read(C), undefined);
    fs.rmSync(path.join(dir, `${C}.json`));
  });

  it('writes and removes through to disk before memory', async () => {
    const cache = new CheckpointCache(new CheckpointFiles(root, silentLogger()));
    await cache.write(sample(C));
    assert.deepEqual(await cache.read(C), sample(C));
    assert.ok(fs.existsSync(path.join(dir, `${C}.json`)));
    await cache.remove(A);
    assert.equal(fs.existsSync(path.join(dir, `${A}.json`)), false);
    assert.deepEqual(await cache.ids(), [C]);
    // A fresh cache on the same directory sees the same.
    assert.deepEqual(await new CheckpointCache(new CheckpointFiles(root, silentLogger())).ids(), [C]);
  });

  it('checks IDs as the store does', async () => {
    const cache = new CheckpointCache(new CheckpointFiles(root, silentLogger()));
    await assert.rejects(cache.read('../../etc/passwd'), InvalidArgumentError);
    await assert.rejects(cache.remove('abc'), InvalidArgumentError);
    await assert.rejects(cache.write(sample('../x')), InvalidArgumentError);
    assert.deepEqual(await cache.ids(), [C], 'a refused write changes nothing');
  });
});
