// Docker's output once the client reset a channel it goes to: what goes there is dropped up to a
// bound, so a command with little left to say still ends; past it nothing more is read from
// Docker's connection (before, all of it was read at full speed and dropped).
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { DockerOutput, MAX_DROPPED_BYTES } from '../../../src/streaming/docker-output';
import { waitFor } from '../../support/poll';

function frame(stream: number, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head[0] = stream;
  head.writeUInt32BE(data.length, 4);
  return Buffer.concat([head, data]);
}

describe('Docker output to a channel the client reset', () => {
  it('drops what goes to a reset channel up to its bound, then takes no more from its source', async () => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let delivered = 0;
    let warned = '';
    stdout.on('data', (d: Buffer) => (delivered += d.length));
    stderr.on('data', (d: Buffer) => (warned += d.toString()));
    const demux = new DockerOutput(stdout, stderr, false);
    const source = new PassThrough();
    source.pipe(demux);
    const piece = Buffer.alloc(64 * 1024, 0x7a);
    source.write(frame(1, piece));
    await waitFor('the first piece to reach stdout', () => delivered === piece.length, { intervalMs: 5 });

    stdout.destroy();
    // A little more for stdout is dropped; stderr goes on.
    source.write(frame(1, piece));
    source.write(frame(2, Buffer.from('still here')));
    await waitFor('stderr past the dropped piece', () => warned === 'still here', { intervalMs: 5 });

    const pieces = 64;
    for (let i = 0; i < pieces; i++) source.write(frame(1, piece));
    // A moment is plenty for 4 MiB between in-memory streams: before, all of it was read and dropped.
    await new Promise((r) => setTimeout(r, 100));
    const held = source.readableLength + source.writableLength;
    const droppable = Math.floor(MAX_DROPPED_BYTES / piece.length) - 1;
    // What the bound let through, and two of Docker's reads waiting in the demultiplexer.
    assert.ok(held >= (pieces - droppable - 3) * piece.length, `only ${held} bytes wait in the source: it was read on`);
    assert.equal(demux.writableFinished, false);
    demux.destroy();
  });
});
