// Docker's output once the client reset a channel it goes to: what goes there is dropped up to a
// bound, so a command with little left to say still ends; past it nothing more is read from
// Docker's connection (before, all of it was read at full speed and dropped).
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { LENT_READ_BUFFERS } from '../../../src/docker/hijack';
import { DockerOutput, MAX_DROPPED_BYTES, type SentBarrier } from '../../../src/streaming/docker-output';
import { withCountedHijack } from '../../support/counted-hijack';
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

describe('Docker output read lent from its connection', () => {
  /** A channel that says when its writes have gone out (as SPDY streams and WebSocket outputs do). */
  function sentChannel(sink: (d: Buffer) => void, sent: boolean): Writable & SentBarrier {
    return Object.assign(new Writable({ write: (chunk: Buffer, _enc, done) => (sink(Buffer.from(chunk)), done()) }), {
      afterSent: (then: (sent: boolean) => void) => setImmediate(() => then(sent)),
    });
  }

  function run(sent: boolean): Promise<{ buffers: number; reads: number; stdout: string; stderr: string }> {
    const write = (socket: Socket): void => {
      for (let i = 0; i < 200; i++) socket.write(Buffer.concat([frame(1, Buffer.alloc(40_000, 0x6f)), frame(2, Buffer.from(`e${i};`))]));
    };
    return withCountedHijack(write, async (connection, count) => {
      let stdout = '';
      let stderr = '';
      const output = new DockerOutput(sentChannel((d) => (stdout += d.toString()), sent), sentChannel((d) => (stderr += d.toString()), sent), false);
      output.readFrom(connection);
      await new Promise((resolve) => output.once('finish', resolve));
      return { ...count(), stdout, stderr };
    });
  }

  it('reads into a few buffers again once the channels sent them, every byte in order', async () => {
    const r = await run(true);
    assert.equal(r.stdout, 'o'.repeat(200 * 40_000));
    assert.equal(r.stderr, Array.from({ length: 200 }, (_, i) => `e${i};`).join(''));
    console.log(`${r.reads} reads from ${r.buffers} buffers`);
    // Before, the output was piped: each read of the connection a new buffer.
    assert.ok(r.buffers <= LENT_READ_BUFFERS + 2 && r.reads > 20, `${r.reads} reads from ${r.buffers} buffers`);
  });

  it('does not read into a buffer again while a channel may hold part of it', async () => {
    const r = await run(false);
    assert.equal(r.stdout.length, 200 * 40_000);
    assert.equal(r.buffers, r.reads);
  });
});
