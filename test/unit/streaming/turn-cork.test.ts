// pipeInBatches gathers toward Docker what several reads of one poll turn bring (libuv reads a
// socket up to 32 times a turn, and each read's callback ends its own tick): one write for the
// turn, not one a read, so dockerd wakes once. The bound on what waits unwritten still holds.
import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pipeInBatches } from '../../../src/streaming/batched-pipe';

const KiB = 1024;

/** A target that records the chunks each write call took, completing each at once. */
function countingTarget(): { target: Writable; calls: number[]; bytes: () => number } {
  const calls: number[] = [];
  let bytes = 0;
  const target = new Writable({
    writev(chunks, done) {
      calls.push(chunks.length);
      for (const c of chunks) bytes += (c.chunk as Buffer).length;
      done();
    },
    write(chunk: Buffer, _enc, done) {
      calls.push(1);
      bytes += chunk.length;
      done();
    },
  });
  return { target, calls, bytes: () => bytes };
}

/** Runs `step` `count` times, each in its own tick, as separate reads' callbacks run. */
const inSeparateTicks = (count: number, step: (i: number) => void): Promise<void> =>
  new Promise((resolve) => {
    let i = 0;
    const next = (): void => {
      if (i === count) return resolve();
      step(i++);
      process.nextTick(next);
    };
    next();
  });

const turnEnd = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('pipeInBatches across the reads of one poll turn', () => {
  it('chunks that arrive in separate ticks of one turn leave in one write', async () => {
    const source = new PassThrough();
    const { target, calls, bytes } = countingTarget();
    pipeInBatches(source, target, 64 * KiB);
    // Four 8 KiB chunks, each in its own tick: four reads of a socket in one poll phase.
    await inSeparateTicks(4, (i) => source.write(Buffer.alloc(8 * KiB, i)));
    await turnEnd();
    await turnEnd();
    console.log(`4 chunks in 4 ticks of one turn: write calls ${calls.join(', ')}`);
    assert.equal(bytes(), 32 * KiB);
    assert.deepEqual(calls, [4], 'one write call with the four chunks');
  });

  it('what waits unwritten stays within the bound and one chunk', async () => {
    const source = new PassThrough();
    const { target, calls, bytes } = countingTarget();
    let most = 0;
    const write = target.write.bind(target);
    target.write = ((chunk: Buffer) => {
      const answer = write(chunk);
      most = Math.max(most, target.writableLength);
      return answer;
    }) as typeof target.write;
    pipeInBatches(source, target, 64 * KiB);
    await inSeparateTicks(32, () => source.write(Buffer.alloc(32 * KiB)));
    source.end();
    await new Promise((resolve) => target.once('finish', resolve));
    console.log(`32 chunks of 32 KiB: ${calls.length} write calls (${calls.join(', ')}), most unwritten ${most}`);
    assert.equal(bytes(), 32 * 32 * KiB);
    assert.ok(most <= 64 * KiB + 32 * KiB, `at most the bound and one chunk wait: ${most}`);
    assert.ok(calls.length <= 16, `batches of about the bound, not a call a chunk: ${calls.length}`);
  });
});
