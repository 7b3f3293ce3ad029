// Docker's output once the client reset a channel it goes to: nothing reads that channel any
// more, so nothing more is read from Docker's connection (before, it was read at full speed and
// dropped).
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { DockerOutput } from '../../../src/streaming/docker-output';
import { waitFor } from '../../support/poll';

function frame(stream: number, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head[0] = stream;
  head.writeUInt32BE(data.length, 4);
  return Buffer.concat([head, data]);
}

describe('Docker output to a channel the client reset', () => {
  it('takes no more from its source once a channel its output goes to is destroyed', async () => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let delivered = 0;
    stdout.on('data', (d: Buffer) => (delivered += d.length));
    stderr.resume();
    const demux = new DockerOutput(stdout, stderr, false);
    const source = new PassThrough();
    source.pipe(demux);
    const piece = Buffer.alloc(64 * 1024, 0x7a);
    source.write(frame(1, piece));
    await waitFor('the first piece to reach stdout', () => delivered === piece.length, { intervalMs: 5 });

    stdout.destroy();
    for (let i = 0; i < 64; i++) source.write(frame(1, piece));
    // A moment is plenty for 4 MiB between in-memory streams: before, all of it was read and dropped.
    await new Promise((r) => setTimeout(r, 100));
    const held = source.readableLength + source.writableLength;
    assert.ok(held > 60 * piece.length, `the source holds ${held} bytes: it is not read`);
    assert.equal(demux.writableFinished, false);
    demux.destroy();
  });

  it('keeps copying to a channel we ended, dropping what goes to it, and to the other channel', async () => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    stdout.resume();
    stdout.end();
    const demux = new DockerOutput(stdout, stderr, false);
    demux.write(frame(1, Buffer.from('late')));
    demux.end(frame(2, Buffer.from('oops')));
    await new Promise((r) => demux.once('finish', r));
    assert.equal(stderr.read()?.toString(), 'oops');
  });
});
