// The one decoder of Docker's multiplexed stream (exec, attach, ExecSync, logs): frames split
// anywhere across chunks, empty frames, and the one answer to a header naming no known stream.
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { demuxInto, FrameSplitter, parseFrameHeader, type FramePieceListener, type FrameStream } from '../../../src/docker/stream-frames';
import { MultiplexedLogDecoder } from '../../../src/logs/cri-format';
import { DockerOutput } from '../../../src/streaming/docker-output';
import { withCountedHijack } from '../../support/counted-hijack';

function frame(stream: number, payload: string | Buffer): Buffer {
  const data = Buffer.from(payload);
  const head = Buffer.alloc(8);
  head[0] = stream;
  head.writeUInt32BE(data.length, 4);
  return Buffer.concat([head, data]);
}

/** A sink as ExecSync's: copies each piece as it is taken. */
function taken(): { take: FramePieceListener; stdout: string; stderr: string } {
  const sink = {
    stdout: '',
    stderr: '',
    take: (stream: FrameStream, data: Buffer) => void (sink[stream] += data.toString('latin1')),
  };
  return sink;
}

interface Piece {
  stream: FrameStream;
  data: string;
  ends: boolean;
}

/** Feeds `chunks` to one splitter; the pieces it handed on. */
function split(chunks: Buffer[], raw = false): Piece[] {
  const frames = new FrameSplitter(raw);
  const pieces: Piece[] = [];
  for (const chunk of chunks) frames.push(chunk, (stream, data, ends) => pieces.push({ stream, data: data.toString('latin1'), ends }));
  return pieces;
}

/** What each stream received, joined, and the frames completed. */
function joined(pieces: Piece[]): { stdout: string; stderr: string; frames: number } {
  const out = { stdout: '', stderr: '', frames: 0 };
  for (const p of pieces) {
    out[p.stream] += p.data;
    if (p.ends) out.frames++;
  }
  return out;
}

describe('Docker stream frames', () => {
  it('parses a header: the stream (stdin and stdout to stdout, stderr and Docker\'s errors to stderr) and the length', () => {
    assert.deepEqual(parseFrameHeader(frame(1, 'abc')), { stream: 'stdout', length: 3 });
    assert.deepEqual(parseFrameHeader(frame(2, Buffer.alloc(70000))), { stream: 'stderr', length: 70000 });
    assert.deepEqual(parseFrameHeader(frame(0, '')), { stream: 'stdout', length: 0 });
    assert.deepEqual(parseFrameHeader(frame(3, 'Error grabbing logs')), { stream: 'stderr', length: 19 });
    assert.equal(parseFrameHeader(frame(4, 'x')), undefined);
    assert.equal(parseFrameHeader(Buffer.from('plain te')), undefined);
  });

  it('splits good frames cut at every offset, payloads handed on as they arrive', () => {
    const wire = Buffer.concat([frame(1, 'out one\n'), frame(2, 'err\n'), frame(1, 'out two')]);
    for (let cut = 1; cut < wire.length; cut++) {
      const pieces = split([wire.subarray(0, cut), wire.subarray(cut)]);
      assert.deepEqual(joined(pieces), { stdout: 'out one\nout two', stderr: 'err\n', frames: 3 }, `cut at ${cut}`);
    }
    // One byte at a time: a piece per payload byte, the last of each frame marked.
    const bytes = split([...wire].map((b) => Buffer.from([b])));
    assert.equal(bytes.length, 'out one\nerr\nout two'.length);
    assert.deepEqual(joined(bytes), { stdout: 'out one\nout two', stderr: 'err\n', frames: 3 });
  });

  it('holds a header split across chunks until it is whole', () => {
    const wire = frame(2, 'late');
    const frames = new FrameSplitter();
    const pieces: string[] = [];
    for (const cut of [wire.subarray(0, 3), wire.subarray(3, 7)]) frames.push(cut, (_s, d) => pieces.push(d.toString()));
    assert.equal(pieces.length, 0, 'nothing before the header is whole');
    frames.push(wire.subarray(7), (s, d, ends) => pieces.push(`${s}:${d.toString()}:${ends}`));
    assert.deepEqual(pieces, ['stderr:late:true']);
  });

  it('keeps a header cut by a chunk\'s end whole when that chunk\'s buffer is read into again (a lent read)', () => {
    const wire = frame(2, 'late');
    const frames = new FrameSplitter();
    const pieces: string[] = [];
    const read = Buffer.from(wire.subarray(0, 5));
    frames.push(read, (_s, d) => pieces.push(d.toString()));
    // The connection reads its next bytes into the same buffer (src/docker/hijack.ts).
    read.fill(0x41);
    frames.push(wire.subarray(5), (s, d, ends) => pieces.push(`${s}:${d.toString()}:${ends}`));
    assert.deepEqual(pieces, ['stderr:late:true']);
  });

  it('gives no piece for empty frames and goes on after them', () => {
    const wire = Buffer.concat([frame(1, ''), frame(2, ''), frame(2, 'e'), frame(1, ''), frame(1, 'o')]);
    assert.deepEqual(split([wire]), [
      { stream: 'stderr', data: 'e', ends: true },
      { stream: 'stdout', data: 'o', ends: true },
    ]);
  });

  it('takes a header naming no known stream as a stream not multiplexed: it and all after it is stdout as is', () => {
    const text = 'plain text, \x01\x02 not multiplexed';
    const frames = new FrameSplitter();
    const pieces: Piece[] = [];
    const onPiece = (stream: FrameStream, data: Buffer, ends: boolean) => pieces.push({ stream, data: data.toString('latin1'), ends });
    frames.push(Buffer.concat([frame(2, 'e'), Buffer.from(text.slice(0, 10))]), onPiece);
    assert.equal(frames.raw, true);
    frames.push(Buffer.concat([Buffer.from(text.slice(10)), frame(2, 'not a frame now')]), onPiece);
    assert.deepEqual(joined(pieces), { stdout: text + frame(2, 'not a frame now').toString('latin1'), stderr: 'e', frames: 1 });
    // A TTY's stream is raw from the start.
    assert.deepEqual(split([frame(2, 'x')], true), [{ stream: 'stdout', data: frame(2, 'x').toString('latin1'), ends: false }]);
  });

  it('gives the same answer to a bad header in exec and attach, ExecSync and logs', async () => {
    const wire = Buffer.concat([frame(1, '2026-11-22T02:04:17.123456789Z one\n'), Buffer.from('2026-11-22T02:04:18.000000001Z raw line\n')]);
    const expected = '2026-11-22T02:04:17.123456789Z one\n2026-11-22T02:04:18.000000001Z raw line\n';

    const [execOut, execErr] = [new PassThrough(), new PassThrough()];
    const output = new DockerOutput(execOut, execErr, false);
    output.end(wire);
    await new Promise((r) => output.once('finish', r));
    assert.equal(execOut.read()?.toString(), expected, 'exec and attach');

    const sync = taken();
    const source = new PassThrough();
    demuxInto(source, sync.take);
    source.end(wire);
    await new Promise((r) => source.once('end', r));
    assert.equal(sync.stdout, expected, 'ExecSync');
    assert.equal(sync.stderr, '');

    const logs = new MultiplexedLogDecoder();
    const records = [...logs.push(wire), ...logs.end()];
    assert.deepEqual(
      records.map((r) => [r.timestamp, r.stream, r.partial, r.content.toString()]),
      [
        ['2026-11-22T02:04:17.123456789Z', 'stdout', false, 'one'],
        ['2026-11-22T02:04:18.000000001Z', 'stdout', false, 'raw line'],
      ],
      'logs',
    );
  });

  it('splits ExecSync\'s stream into stdout and stderr whatever the chunks', async () => {
    const wire = Buffer.concat([frame(1, 'out'), frame(2, 'err'), frame(3, 'docker says'), frame(0, '!')]);
    const sync = taken();
    const source = new PassThrough();
    demuxInto(source, sync.take);
    for (let i = 0; i < wire.length; i += 5) source.write(wire.subarray(i, i + 5));
    source.end();
    await new Promise((r) => source.once('end', r));
    assert.equal(sync.stdout, 'out!');
    assert.equal(sync.stderr, 'errdocker says');
  });

  it('takes ExecSync\'s output from Docker\'s connection as lent reads: one buffer read into again, not one per read', async () => {
    const write = (socket: Socket): void => {
      for (let i = 0; i < 200; i++) socket.write(Buffer.concat([frame(1, Buffer.alloc(40_000, 0x6f)), frame(2, `e${i};`)]));
    };
    const sync = taken();
    const { reads, buffers } = await withCountedHijack(write, async (connection, count) => {
      demuxInto(connection, sync.take);
      await new Promise((resolve) => connection.once('end', resolve));
      return count();
    });
    assert.equal(sync.stdout, 'o'.repeat(200 * 40_000));
    assert.equal(sync.stderr, Array.from({ length: 200 }, (_, i) => `e${i};`).join(''));
    // Piped, each read was a buffer of its own (a copy of the read).
    assert.ok(reads > 20 && buffers <= 2, `${reads} reads from ${buffers} buffers`);
  });
});
