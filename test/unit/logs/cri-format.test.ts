import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  encodeCriLine,
  MAX_PIECE_BYTES,
  MultiplexedLogDecoder,
  parseCriLine,
  RawLogDecoder,
  ResumeFilter,
  resumePointFromTail,
  sinceSeconds,
  type LogRecord,
} from '../../../src/logs/cri-format';

const T1 = '2026-11-22T02:04:17.123456789Z';
const T2 = '2026-11-22T02:04:18.000000001Z';

function frame(stream: 1 | 2, payload: string | Buffer): Buffer {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

function text(records: LogRecord[]): string[] {
  return records.map((r) => encodeCriLine(r).toString());
}

describe('CRI log format', () => {
  it('encodes full and partial lines', () => {
    assert.equal(encodeCriLine({ timestamp: T1, stream: 'stdout', partial: false, content: Buffer.from('hello') }).toString(), `${T1} stdout F hello\n`);
    assert.equal(encodeCriLine({ timestamp: T1, stream: 'stderr', partial: true, content: Buffer.from('') }).toString(), `${T1} stderr P \n`);
    assert.deepEqual(parseCriLine(`${T1} stderr P a b`), { timestamp: T1, stream: 'stderr', partial: true, content: 'a b' });
    assert.equal(parseCriLine('garbage'), undefined);
  });

  it('decodes multiplexed frames split anywhere, stdout and stderr', () => {
    const wire = Buffer.concat([frame(1, `${T1} out line\n`), frame(2, `${T2} err line\n`), frame(1, `${T2} no newline`)]);
    for (let cut = 1; cut < wire.length; cut += 7) {
      const d = new MultiplexedLogDecoder();
      const got = [...d.push(wire.subarray(0, cut)), ...d.push(wire.subarray(cut)), ...d.end()];
      assert.deepEqual(text(got), [`${T1} stdout F out line\n`, `${T2} stderr F err line\n`, `${T2} stdout P no newline\n`], `cut at ${cut}`);
    }
  });

  it('splits a long message into P pieces and a final F, holding at most one piece', () => {
    const long = 'x'.repeat(MAX_PIECE_BYTES * 2 + 10);
    const d = new MultiplexedLogDecoder();
    const wire = frame(1, `${T1} ${long}\n`);
    const got: LogRecord[] = [];
    for (let i = 0; i < wire.length; i += 1000) got.push(...d.push(wire.subarray(i, i + 1000)));
    got.push(...d.end());
    assert.deepEqual(got.map((r) => [r.partial, r.content.length]), [[true, MAX_PIECE_BYTES], [true, MAX_PIECE_BYTES], [false, 10]]);
    assert.equal(Buffer.concat(got.map((r) => r.content)).toString(), long);
  });

  it('decodes a TTY stream line by line, keeping carriage returns', () => {
    const d = new RawLogDecoder();
    const got = [...d.push(Buffer.from(`${T1} one\r\n${T2} tw`)), ...d.push(Buffer.from('o\r\n')), ...d.end()];
    assert.deepEqual(text(got), [`${T1} stdout F one\r\n`, `${T2} stdout F two\r\n`]);
  });

  it('resumes after exactly the records already written, even with equal timestamps', () => {
    const rec = (timestamp: string, c: string): LogRecord => ({ timestamp, stream: 'stdout', partial: false, content: Buffer.from(c) });
    const all = [rec(T1, 'a'), rec(T1, 'b'), rec(T1, 'c'), rec(T2, 'd')];
    const first = new ResumeFilter(undefined);
    const written = all.slice(0, 2).filter((r) => first.accept(r));
    assert.deepEqual(first.current(), { timestamp: T1, count: 2, stream: 'stdout' });
    const point = resumePointFromTail(text(written).join(''), true);
    assert.deepEqual(point, { timestamp: T1, count: 2, stream: 'stdout' });
    const again = new ResumeFilter(point);
    assert.deepEqual(all.filter((r) => again.accept(r)).map((r) => r.content.toString()), ['c', 'd']);
    assert.deepEqual(again.current(), { timestamp: T2, count: 1, stream: 'stdout' });
  });

  it('keeps records whose times run backwards, as stdout and stderr may, and resumes by stream position', () => {
    const rec = (timestamp: string, c: string): LogRecord => ({ timestamp, stream: 'stdout', partial: false, content: Buffer.from(c) });
    const all = [rec(T2, 'late-stamped'), rec(T1, 'early-stamped'), rec(T2, 'next')];
    const live = new ResumeFilter(undefined);
    assert.deepEqual(all.filter((r) => live.accept(r)).map((r) => r.content.toString()), ['late-stamped', 'early-stamped', 'next']);
    const resumed = new ResumeFilter({ timestamp: T1, count: 1 });
    assert.deepEqual(all.filter((r) => resumed.accept(r)).map((r) => r.content.toString()), ['next']);
  });

  it('resumes exactly inside a long line whose pieces the other stream interrupts', () => {
    // What Docker sends for `echo one; echo two >&2; <100 KiB line>; echo last >&2`: the
    // pieces of the long line all carry the line's first time, stderr lines come between
    // them, and the final piece can come after a later-stamped stderr line.
    const L = '2026-11-22T02:04:17.500000000Z';
    const E1 = '2026-11-22T02:04:17.500200000Z';
    const E2 = '2026-11-22T02:04:17.560000000Z';
    const out = (timestamp: string, c: string, partial = false): LogRecord => ({ timestamp, stream: 'stdout', partial, content: Buffer.from(c) });
    const err = (timestamp: string, c: string): LogRecord => ({ timestamp, stream: 'stderr', partial: false, content: Buffer.from(c) });
    const all = [out(T1, 'one'), out(L, 'p1', true), out(L, 'p2', true), err(E1, 'two'), out(L, 'p3', true), err(E2, 'last'), out(L, 'p4')];
    const names = (records: LogRecord[]) => records.map((r) => r.content.toString());
    // Stop after every record in turn, then replay the whole stream from the point, both from
    // the live filter and from the file's tail: each record is written exactly once.
    for (let cut = 1; cut <= all.length; cut++) {
      const live = new ResumeFilter(undefined);
      const written = all.slice(0, cut).filter((r) => live.accept(r));
      assert.deepEqual(names(written), names(all.slice(0, cut)));
      const fromTail = resumePointFromTail(text(written).join(''), true);
      assert.deepEqual(fromTail, live.current(), `cut ${cut}: the tail shows the live point`);
      live.seek();
      const rest = all.filter((r) => live.accept(r));
      assert.deepEqual(names([...written, ...rest]), names(all), `cut ${cut}: seek again`);
      const resumed = new ResumeFilter(fromTail);
      assert.deepEqual(names([...written, ...all.filter((r) => resumed.accept(r))]), names(all), `cut ${cut}: restart`);
    }
    const live = new ResumeFilter(undefined);
    all.slice(0, 5).forEach((r) => live.accept(r));
    assert.deepEqual(live.current(), { timestamp: L, count: 3, stream: 'stdout' });
    all.slice(5, 6).forEach((r) => live.accept(r));
    // stderr wrote last, while stdout's line is unfinished: the point carries stdout's run.
    assert.deepEqual(live.current(), { timestamp: E2, count: 1, stream: 'stderr', other: { timestamp: L, count: 3 } });
  });

  it('counts an unfinished line on from the point after a restart', () => {
    const L = '2026-11-22T02:04:17.500000000Z';
    const E1 = '2026-11-22T02:04:17.500200000Z';
    const piece = (c: string, partial = true): LogRecord => ({ timestamp: L, stream: 'stdout', partial, content: Buffer.from(c) });
    const err: LogRecord = { timestamp: E1, stream: 'stderr', partial: false, content: Buffer.from('e') };
    const resumed = new ResumeFilter({ timestamp: E1, count: 1, stream: 'stderr', other: { timestamp: L, count: 2 } });
    assert.deepEqual([piece('p1'), piece('p2'), err, piece('p3', false)].filter((r) => resumed.accept(r)).map((r) => r.content.toString()), ['p3']);
    assert.deepEqual(resumed.current(), { timestamp: L, count: 3, stream: 'stdout' });
  });

  it('gives up seeking a point the replay never reaches', () => {
    const far = '2026-11-22T02:05:00.000000000Z';
    const f = new ResumeFilter({ timestamp: T1, count: 1 });
    assert.equal(f.accept({ timestamp: far, stream: 'stdout', partial: false, content: Buffer.from('x') }), true);
  });

  it('reads the resume point from a tail, ignoring a cut first line and an unfinished last one', () => {
    const tail = `stdout F cut\n${T1} stdout F x\n${T2} stdout P y\n${T2} stdout F z\n${T2} stdout F unfin`;
    assert.deepEqual(resumePointFromTail(tail, false), { timestamp: T2, count: 2, stream: 'stdout' });
    const mixed = `${T1} stdout P a\n${T2} stderr F b\n${T1} stdout P c\n${T2} stderr P d\n`;
    assert.deepEqual(resumePointFromTail(mixed, true), { timestamp: T2, count: 2, stream: 'stderr', other: { timestamp: T1, count: 2 } });
    assert.equal(resumePointFromTail('', true), undefined);
    assert.equal(sinceSeconds({ timestamp: T1, count: 1 }), Math.floor(Date.parse(T1) / 1000) - 1);
    assert.equal(sinceSeconds(undefined), 0);
  });
});
