import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { encodeCriLine, MAX_PIECE_BYTES, ResumeFilter, samePoint, type LogRecord } from '../../../src/logs/cri-format';
import {
  afterEndOfFile,
  decodeJsonLogLine,
  expectedJsonLogPath,
  JsonLogDecoder,
  MAX_JSON_LINE_BYTES,
  normalizeTimestamp,
  planResumeRead,
  type JsonLogProblem,
} from '../../../src/logs/json-file';
import { logSourceOf } from '../../../src/logs/follower';
import { jsonLogRoot } from '../../../src/logs/log-manager';
import { recordingLogger } from '../../support/recording-logger';
import type { ContainerInspect } from '../../../src/docker/types';

const ID = 'a'.repeat(64);

function jsonLine(log: string, stream = 'stdout', time = '2026-11-25T10:43:22.617034902Z'): string {
  return `${JSON.stringify({ log, stream, time })}\n`;
}

function cri(records: LogRecord[]): string[] {
  return records.map((r) => encodeCriLine(r).toString());
}

describe('json-file log decoding', () => {
  it('decodes full lines, partial pieces and escaped characters, as Docker writes them', () => {
    // Docker's own escapes: \u0009 for a tab, \" and \\, raw UTF-8, control characters.
    const raw =
      '{"log":"x\\u0009y\\"z\\\\\\n","stream":"stdout","time":"2026-11-25T10:43:22.617045748Z"}\n' +
      '{"log":"é\\n","stream":"stderr","time":"2026-11-25T10:43:22.6159544Z"}\n' +
      '{"log":"abc\\u0001\\u001b[1m","stream":"stdout","time":"2026-11-25T10:43:22Z"}\n';
    const decoder = new JsonLogDecoder(0);
    const lines = decoder.push(Buffer.from(raw));
    assert.deepEqual(cri(lines.flatMap((l) => l.records)), [
      '2026-11-25T10:43:22.617045748Z stdout F x\ty"z\\\n',
      '2026-11-25T10:43:22.615954400Z stderr F é\n',
      '2026-11-25T10:43:22.000000000Z stdout P abc\u0001\u001b[1m\n',
    ]);
    assert.deepEqual(lines.map((l) => l.end), [...raw.matchAll(/\n/g)].map((m) => Buffer.byteLength(raw.slice(0, m.index! + 1))));
    assert.equal(decoder.offset, Buffer.byteLength(raw));
    assert.equal(decoder.torn, false);
  });

  it('keeps a TTY line\'s carriage return, as the log API follower did', () => {
    assert.deepEqual(cri(decodeJsonLogLine(JSON.stringify({ log: 'hi\r\n', stream: 'stdout', time: '2026-11-25T10:43:21.350081127Z' })) as LogRecord[]), [
      '2026-11-25T10:43:21.350081127Z stdout F hi\r\n',
    ]);
  });

  it('cuts text longer than a CRI piece into P pieces of one timestamp', () => {
    const records = decodeJsonLogLine(JSON.stringify({ log: `${'a'.repeat(MAX_PIECE_BYTES + 10)}\n`, stream: 'stdout', time: '2026-11-25T10:43:21Z' }));
    assert.ok(Array.isArray(records));
    assert.deepEqual(records.map((r) => [r.partial, r.content.length]), [[true, MAX_PIECE_BYTES], [false, 10]]);
  });

  it('waits for the newline of a line still being written, whatever the chunks', () => {
    const raw = jsonLine('one\n') + jsonLine('two\n', 'stderr');
    const cut = raw.length - 7;
    const decoder = new JsonLogDecoder(100);
    const first = decoder.push(Buffer.from(raw.slice(0, cut)));
    assert.deepEqual(first.map((l) => l.records.map((r) => r.content.toString())), [['one']]);
    assert.equal(decoder.torn, true);
    assert.equal(decoder.offset, 100 + jsonLine('one\n').length, 'a restart would read the torn line again, whole');
    assert.equal(decoder.readPosition, 100 + cut);
    // Byte by byte: the line comes out once its newline does.
    const rest = Buffer.from(raw.slice(cut));
    for (let i = 0; i < rest.length - 1; i++) assert.deepEqual(decoder.push(rest.subarray(i, i + 1)), []);
    const last = decoder.push(rest.subarray(rest.length - 1));
    assert.deepEqual(last.map((l) => [l.records[0]!.stream, l.records[0]!.content.toString(), l.end]), [['stderr', 'two', 100 + raw.length]]);
    assert.equal(decoder.torn, false);
  });

  it('keeps multi-byte characters split across chunks whole', () => {
    const raw = Buffer.from(jsonLine('日本\n'));
    const at = raw.indexOf(Buffer.from('日')) + 1;
    const decoder = new JsonLogDecoder(0);
    const lines = [...decoder.push(raw.subarray(0, at)), ...decoder.push(raw.subarray(at))];
    assert.equal(lines[0]!.records[0]!.content.toString(), '日本');
  });

  it('skips what is not a json-file line, and a line longer than it holds, counting its bytes', () => {
    const long = `{"log":"${'b'.repeat(MAX_JSON_LINE_BYTES)}\\n","stream":"stdout","time":"2026-11-25T10:43:21Z"}\n`;
    const raw = 'not json\n' + '{"log":1}\n' + long + jsonLine('after\n');
    const decoder = new JsonLogDecoder(0);
    const problems: JsonLogProblem[] = [];
    const lines: ReturnType<JsonLogDecoder['push']> = [];
    const buf = Buffer.from(raw);
    for (let i = 0; i < buf.length; i += 64 * 1024) lines.push(...decoder.push(buf.subarray(i, i + 64 * 1024), problems));
    assert.deepEqual(problems.map((p) => p.offset), [0, 9, 19]);
    assert.deepEqual(lines.flatMap((l) => l.records.map((r) => r.content.toString())), ['after']);
    assert.equal(lines.at(-1)!.end, buf.length);
    assert.equal(decoder.offset, buf.length);
  });

  it('writes every time as UTC with nine fraction digits', () => {
    assert.equal(normalizeTimestamp('2026-11-25T10:43:22.1Z'), '2026-11-25T10:43:22.100000000Z');
    assert.equal(normalizeTimestamp('2026-11-25T10:43:22Z'), '2026-11-25T10:43:22.000000000Z');
    assert.equal(normalizeTimestamp('2026-11-25T12:43:22.123456789+02:00'), '2026-11-25T10:43:22.123456789Z');
    assert.equal(normalizeTimestamp('yesterday'), undefined);
  });
});

describe('json-file log files', () => {
  it('accepts only Docker\'s own path for the container', () => {
    assert.equal(expectedJsonLogPath('/var/lib/docker', ID), `/var/lib/docker/containers/${ID}/${ID}-json.log`);
    assert.equal(expectedJsonLogPath('/var/lib/docker/', ID), `/var/lib/docker/containers/${ID}/${ID}-json.log`);
    assert.equal(expectedJsonLogPath('relative', ID), undefined);
    assert.equal(expectedJsonLogPath('/var/lib/docker', '../etc'), undefined);
    const inspect = (over: Partial<ContainerInspect>): ContainerInspect =>
      ({ Id: ID, LogPath: `/var/lib/docker/containers/${ID}/${ID}-json.log`, HostConfig: { LogConfig: { Type: 'json-file', Config: {} } }, ...over }) as ContainerInspect;
    assert.deepEqual(logSourceOf(inspect({}), '/var/lib/docker'), { kind: 'json-file', jsonLogPath: `/var/lib/docker/containers/${ID}/${ID}-json.log` });
    assert.deepEqual(logSourceOf(inspect({ LogPath: '/etc/shadow' }), '/var/lib/docker'), { kind: 'docker-api', refused: '/etc/shadow' });
    assert.deepEqual(logSourceOf(inspect({ LogPath: `/var/lib/docker/containers/${'b'.repeat(64)}/${'b'.repeat(64)}-json.log` }), '/var/lib/docker').kind, 'docker-api');
    assert.deepEqual(logSourceOf(inspect({}), ''), { kind: 'docker-api', refused: `/var/lib/docker/containers/${ID}/${ID}-json.log` });
    assert.deepEqual(logSourceOf(inspect({ HostConfig: { LogConfig: { Type: 'local', Config: {} } } }), '/var/lib/docker'), { kind: 'docker-api' });
    assert.deepEqual(logSourceOf(inspect({ HostConfig: { LogConfig: { Type: 'none', Config: {} } } }), '/var/lib/docker'), { kind: 'none' });
  });

  it('decides at a file\'s end: switch to a rotated-in file, restart a truncated one, finish after the exit', () => {
    const reading = { device: 1n, inode: 10n, size: 500n };
    assert.equal(afterEndOfFile({ reading, atPath: { device: 1n, inode: 10n }, position: 500, exited: false }), 'wait');
    assert.equal(afterEndOfFile({ reading, atPath: { device: 1n, inode: 10n }, position: 500, exited: true }), 'done');
    // Rotated: even after the exit, the new file is read before the follower is done.
    assert.equal(afterEndOfFile({ reading, atPath: { device: 1n, inode: 11n }, position: 500, exited: true }), 'switch');
    assert.equal(afterEndOfFile({ reading, atPath: { device: 2n, inode: 10n }, position: 500, exited: false }), 'switch');
    // Between json-file's rename and its new file, nothing is at the path yet.
    assert.equal(afterEndOfFile({ reading, atPath: undefined, position: 500, exited: false }), 'wait');
    assert.equal(afterEndOfFile({ reading: { ...reading, size: 20n }, atPath: { device: 1n, inode: 10n }, position: 500, exited: false }), 'restart');
  });

  it('plans a resumed read from the saved file and offset, through every newer file', () => {
    const live = { index: 0, device: 1n, inode: 30n, size: 100n };
    const one = { index: 1, device: 1n, inode: 20n, size: 5000n };
    const two = { index: 2, device: 1n, inode: 10n, size: 5000n };
    assert.deepEqual(planResumeRead([live, one, two], { device: 1n, inode: 30n, offset: 40 }), { order: [0], offset: 40, exact: true });
    assert.deepEqual(planResumeRead([live, one, two], { device: 1n, inode: 20n, offset: 4000 }), { order: [1, 0], offset: 4000, exact: true });
    assert.deepEqual(planResumeRead([two, live, one], { device: 1n, inode: 10n, offset: 0 }), { order: [2, 1, 0], offset: 0, exact: true });
    // Rotated out of existence, or shorter than the offset (truncated): every file from its start.
    assert.deepEqual(planResumeRead([live, one], { device: 1n, inode: 5n, offset: 10 }), { order: [1, 0], offset: 0, exact: false });
    assert.deepEqual(planResumeRead([live], { device: 1n, inode: 30n, offset: 101 }), { order: [0], offset: 0, exact: false });
    assert.deepEqual(planResumeRead([live], undefined), { order: [0], offset: 0, exact: false });
    // Mid-rotation: only the renamed file is there.
    assert.deepEqual(planResumeRead([one], { device: 1n, inode: 20n, offset: 7 }), { order: [1], offset: 7, exact: true });
  });
});

describe('resuming at a saved json-file offset', () => {
  const rec = (content: string, timestamp: string, stream: 'stdout' | 'stderr' = 'stdout'): LogRecord => ({ timestamp, stream, partial: false, content: Buffer.from(content) });
  const T = (n: number): string => `2026-11-25T10:00:0${n}.000000000Z`;

  it('takes every record after the offset when the CRI file ends at the saved point', () => {
    const saved = new ResumeFilter(undefined);
    for (const r of [rec('a', T(1)), rec('b', T(1))]) saved.accept(r);
    const point = saved.current();
    assert.ok(samePoint(point, { ...point!, other: { timestamp: T(0), count: 1 } }), 'the other stream\'s run does not matter');
    const filter = new ResumeFilter(point, { seek: false });
    assert.equal(filter.seeking, false);
    // A record with the very same time as the point's is new here: nothing is looked for.
    assert.equal(filter.accept(rec('c', T(1))), true);
    assert.deepEqual(filter.current(), { timestamp: T(1), count: 3, stream: 'stdout' });
  });

  it('skips what was written after the save when the CRI file holds more', () => {
    const filePoint = { timestamp: T(2), count: 1, stream: 'stdout' as const };
    const savedPoint = { timestamp: T(1), count: 1, stream: 'stdout' as const };
    assert.equal(samePoint(filePoint, savedPoint), false);
    const filter = new ResumeFilter(filePoint);
    assert.equal(filter.seeking, true);
    // From the saved offset: the records after the saved point, up to the file's last, are old.
    assert.deepEqual([rec('b', T(2)), rec('c', T(3))].map((r) => filter.accept(r)), [false, true]);
    assert.equal(filter.seeking, false);
  });
});

describe("Docker's root as the shim sees it", () => {
  it('reads json-file logs where the containers folder can be read, and through the API where it cannot (logged)', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-docker-root-'));
    try {
      const { log, lines } = recordingLogger();
      assert.equal(jsonLogRoot(root, log), '', 'no containers folder: a shim in a container without Docker\'s root mounted');
      assert.match(lines().at(-1)!.msg, /containers folder cannot be read here/);
      fs.mkdirSync(path.join(root, 'containers'));
      assert.equal(jsonLogRoot(root, log), root);
      assert.equal(jsonLogRoot('', log), '');
      assert.equal(lines().length, 1);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
