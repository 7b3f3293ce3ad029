import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as protobuf from 'protobufjs';
import { protoPath } from '../../../../../src/cri/contract';
import { EXEC_OUTPUT_OWN_BYTES, ExecOutputPool, ExecSyncOutput, truncationNote } from '../../../../../src/shim/container/support/capped-output';

const ExecSyncResponse = protobuf.loadSync(protoPath()).lookupType('runtime.v1.ExecSyncResponse');

/** The answer as a protobuf decoder reads it. */
function decoded(bytes: Buffer): { stdout: string; stderr: string; exitCode: number } {
  const m = ExecSyncResponse.toObject(ExecSyncResponse.decode(bytes), { defaults: true }) as { stdout: Uint8Array; stderr: Uint8Array; exitCode: number };
  return { stdout: Buffer.from(m.stdout).toString(), stderr: Buffer.from(m.stderr).toString(), exitCode: m.exitCode };
}

describe('ExecSync output', () => {
  it('is encoded as an ExecSyncResponse, its views the same bytes', () => {
    const out = new ExecSyncOutput(new ExecOutputPool(0));
    out.take('stdout', Buffer.from('hello '));
    out.take('stderr', Buffer.from('warn'));
    out.take('stdout', Buffer.from('world'));
    const { bytes, stdout, stderr } = out.encode(3);
    assert.deepEqual(decoded(bytes), { stdout: 'hello world', stderr: 'warn', exitCode: 3 });
    assert.equal(stdout.toString(), 'hello world');
    assert.equal(stderr.toString(), 'warn');
    assert.equal(stdout.buffer, bytes.buffer, 'stdout is a view of the encoding, not a copy');
  });

  it('encodes empty output, exit code 0 and a negative exit code as protobuf does', () => {
    assert.deepEqual(decoded(new ExecSyncOutput(new ExecOutputPool(0)).encode(0).bytes), { stdout: '', stderr: '', exitCode: 0 });
    assert.equal(new ExecSyncOutput(new ExecOutputPool(0)).encode(0).bytes.length, 0);
    assert.deepEqual(decoded(new ExecSyncOutput(new ExecOutputPool(0)).encode(-1).bytes), { stdout: '', stderr: '', exitCode: -1 });
  });

  it('shares one budget between stdout and stderr and says what was dropped', () => {
    const out = new ExecSyncOutput(new ExecOutputPool(0), 10);
    out.take('stdout', Buffer.from('123456'));
    out.take('stderr', Buffer.from('abcdef'));
    out.take('stdout', Buffer.from('zz'));
    const { bytes } = out.encode(0);
    const { stdout, stderr } = decoded(bytes);
    assert.equal(stdout, '123456');
    assert.ok(stderr.startsWith('abcd\n[cri-docker-shim: output over'), stderr);
    assert.match(stderr, /2 bytes of stdout were dropped/);
    assert.match(stderr, /2 bytes of stderr were dropped/);
  });

  it('keeps output past its own 64 KiB in one buffer, drawn from the pool, and gives the pool back', () => {
    const pool = new ExecOutputPool(8 * 1024 * 1024);
    const out = new ExecSyncOutput(pool);
    const chunk = Buffer.alloc(64 * 1024, 7);
    for (let i = 0; i < 40; i++) out.take('stdout', chunk);
    assert.ok(pool.available <= 8 * 1024 * 1024 - (40 * chunk.length - EXEC_OUTPUT_OWN_BYTES));
    const { bytes, stdout } = out.encode(0);
    assert.equal(stdout.length, 40 * chunk.length);
    assert.ok(stdout.every((b) => b === 7));
    assert.equal(decoded(bytes).stdout.length, 40 * chunk.length);
    assert.equal(pool.available, 8 * 1024 * 1024);
  });

  it('past its own share, takes only what the node\'s pool has left, and says the pool was in use', () => {
    const pool = new ExecOutputPool(1000);
    const first = new ExecSyncOutput(pool);
    const second = new ExecSyncOutput(pool);
    first.take('stdout', Buffer.alloc(EXEC_OUTPUT_OWN_BYTES + 1000, 1));
    second.take('stdout', Buffer.alloc(EXEC_OUTPUT_OWN_BYTES + 10, 2));
    assert.equal(first.dropped.stdout.bytes, 0);
    assert.deepEqual(second.dropped.stdout, { bytes: 10, byPool: true });
    assert.match(decoded(second.encode(0).bytes).stderr, /ExecSync output pool .* was in use by other calls; 10 bytes of stdout were dropped/);
    first.release();
    first.release();
    assert.equal(pool.available, 1000);
    const third = new ExecSyncOutput(pool);
    third.take('stdout', Buffer.alloc(EXEC_OUTPUT_OWN_BYTES + 10, 3));
    assert.equal(third.dropped.stdout.bytes, 0);
  });

  it('drops what arrives once released', () => {
    const out = new ExecSyncOutput(new ExecOutputPool(0));
    out.release();
    out.take('stdout', Buffer.from('late'));
    assert.equal(out.dropped.stdout.bytes, 4);
  });

  it('notes name the stream and the count', () => {
    assert.match(truncationNote('stdout', { bytes: 2, byPool: false }), /2 bytes of stdout were dropped/);
  });
});
