// Sandbox checkpoints: the checksummed encoding, and the on-disk store (atomic writes, corrupt
// files removed, IDs checked before they become file names).
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { checksumOf, decodeCheckpoint, encodeCheckpoint, type SandboxCheckpoint } from '../../../src/checkpoint/checkpoint';
import { CheckpointFiles } from '../../../src/checkpoint/checkpoint-files';
import { InvalidArgumentError } from '../../../src/errors';
import { silentLogger } from '../../../src/util/logger';
import { sandboxCheckpoint } from '../../support/fixtures/checkpoint';

const ID = 'a'.repeat(64);

/** A pod on its own network with a published port, its labels out of order. */
function sample(over: Partial<SandboxCheckpoint> = {}): SandboxCheckpoint {
  return sandboxCheckpoint({
    id: ID,
    attempt: 2,
    runtimeHandler: '',
    hostNetwork: false,
    portMappings: [{ protocol: 'TCP', containerPort: 80, hostPort: 8080, hostIp: '127.0.0.1' }],
    labels: { b: '2', a: '1' },
    ...over,
  });
}

describe('checkpoint encoding', () => {
  it('round-trips every field', () => {
    const decoded = decodeCheckpoint(encodeCheckpoint(sample()));
    assert.ok(decoded.ok);
    assert.deepEqual(decoded.checkpoint, sample());
  });

  it('has a checksum independent of key order', () => {
    assert.equal(checksumOf(sample({ labels: { a: '1', b: '2' } })), checksumOf(sample({ labels: { b: '2', a: '1' } })));
    assert.notEqual(checksumOf(sample()), checksumOf(sample({ hostNetwork: true })));
  });

  it('rejects edited content', () => {
    const text = encodeCheckpoint(sample()).replace('"hostPort": 8080', '"hostPort": 9090');
    assert.deepEqual(decodeCheckpoint(text), { ok: false, reason: 'checksum does not match the content' });
  });

  it('rejects truncated, foreign and malformed documents without throwing', () => {
    const full = encodeCheckpoint(sample());
    assert.equal(decodeCheckpoint(full.slice(0, full.length / 2)).ok, false);
    assert.equal(decodeCheckpoint('[]').ok, false);
    assert.equal(decodeCheckpoint('{"version":"v0"}').ok, false);
    const wrongType = JSON.parse(full) as Record<string, unknown>;
    wrongType.attempt = 'two';
    assert.equal(decodeCheckpoint(JSON.stringify(wrongType)).ok, false);
    const badPort = JSON.parse(full) as { portMappings: Array<Record<string, unknown>> };
    badPort.portMappings[0]!.containerPort = 70000;
    assert.deepEqual(decodeCheckpoint(JSON.stringify(badPort)), { ok: false, reason: 'a port mapping is malformed' });
  });
});

describe('checkpoint store', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-checkpoint-unit-'));
  after(() => fs.rmSync(root, { recursive: true, force: true }));
  const store = new CheckpointFiles(root, silentLogger());

  it('writes under <root>/sandbox/<id>.json, private to root, and reads it back', async () => {
    await store.write(sample());
    const file = path.join(root, 'sandbox', `${ID}.json`);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.equal(fs.statSync(path.join(root, 'sandbox')).mode & 0o777, 0o700);
    assert.deepEqual(await store.read(ID), sample());
    assert.deepEqual(await store.ids(), [ID]);
    assert.deepEqual(fs.readdirSync(path.join(root, 'sandbox')).sort(), [ID, `${ID}.json`], "cri-dockerd's beside ours, no temp file left");
  });

  it('replaces an existing checkpoint atomically', async () => {
    await store.write(sample({ attempt: 3 }));
    assert.equal((await store.read(ID))?.attempt, 3);
  });

  it('treats a corrupt file as absent and removes it', async () => {
    const id = 'b'.repeat(64);
    const file = path.join(root, 'sandbox', `${id}.json`);
    fs.writeFileSync(file, '{"version":"v1",');
    assert.equal(await store.read(id), undefined);
    assert.equal(fs.existsSync(file), false);
  });

  it('treats a file naming another sandbox as corrupt', async () => {
    const id = 'c'.repeat(64);
    fs.writeFileSync(path.join(root, 'sandbox', `${id}.json`), encodeCheckpoint(sample()));
    assert.equal(await store.read(id), undefined);
    assert.deepEqual((await store.readAll()).map((c) => c.id), [ID]);
  });

  it('refuses anything but a full ID as a file name', async () => {
    for (const bad of ['../../etc/passwd', 'abc', 'A'.repeat(64), `${'a'.repeat(63)}/`]) {
      assert.throws(() => store.pathOf(bad), InvalidArgumentError);
      await assert.rejects(store.read(bad), InvalidArgumentError);
      await assert.rejects(store.remove(bad), InvalidArgumentError);
    }
    await assert.rejects(store.write(sample({ id: '../x' })), InvalidArgumentError);
  });

  it('removes, and a missing checkpoint is fine', async () => {
    await store.remove(ID);
    await store.remove(ID);
    assert.equal(await store.read(ID), undefined);
    assert.deepEqual(await store.ids(), []);
  });

  it('lists nothing when the directory does not exist yet', async () => {
    const fresh = new CheckpointFiles(path.join(root, 'never-made'), silentLogger());
    assert.deepEqual(await fresh.readAll(), []);
  });
});
