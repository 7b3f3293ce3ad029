// Terminal resizes (issue 26): the resize channel is read in linear work and bounded memory, the
// latest size wins, and Docker sees one resize call at a time, at most ten a second, and none for
// a session without a terminal, over WebSocket and SPDY alike.
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { ExecInspect } from '../../../src/docker/types';
import { ResizeFeed, type ResizeListener } from '../../../src/streaming/channels';
import { JsonMessageSplitter, MAX_JSON_MESSAGE_BYTES, parseResize, ResizeReader, type TerminalSize } from '../../../src/streaming/protocol';
import { MIN_RESIZE_INTERVAL_MS, ResizeCoalescer } from '../../../src/streaming/resize-coalescer';
import { RST_CANCEL } from '../../../src/streaming/spdy/framing';
import { StreamingServer } from '../../../src/streaming/streaming-server';
import { FakeDocker } from '../../support/fake-docker';
import { waitFor } from '../../support/poll';
import { recordingLogger } from '../../support/recording-logger';
import { rawSpdyConnect, wsConnect } from '../../support/streaming-clients';

const MiB = 1024 * 1024;
const resizeText = (width: number, height: number) => JSON.stringify({ Width: width, Height: height });
/** As many resize messages as fit in `bytes`, the last one `last`, padded with newlines to exactly `bytes`. */
function packedResizes(bytes: number, last: TerminalSize): Buffer {
  const lastText = `${resizeText(last.width, last.height)}\n`;
  const parts: string[] = [];
  let used = lastText.length;
  for (let i = 0; ; i++) {
    const text = `${resizeText(1 + (i % 500), 1 + (i % 300))}\n`;
    if (used + text.length > bytes) break;
    parts.push(text);
    used += text.length;
  }
  parts.push(lastText, '\n'.repeat(bytes - used));
  return Buffer.from(parts.join(''));
}

describe('the resize channel reader', () => {
  it('looks at each byte once, one byte a push or all at once, and holds only the object under way', () => {
    const stream = packedResizes(64 * 1024, { width: 123, height: 45 });
    const bytewise = new JsonMessageSplitter();
    let messages = 0;
    for (let i = 0; i < stream.length; i++) messages += bytewise.push(stream.subarray(i, i + 1)).length;
    assert.equal(bytewise.scannedBytes, stream.length, 'each byte scanned once');
    assert.equal(messages, stream.toString().trim().split('\n').length);

    // Bytes between objects are dropped as seen: 65,536 one-byte pushes of spacing cost 65,536 bytes of work.
    const spaces = new JsonMessageSplitter();
    let found = 0;
    for (let i = 0; i < 65_536; i++) found += spaces.push(Buffer.from(' ')).length;
    assert.equal(found, 0);
    assert.equal(spaces.scannedBytes, 65_536);
    assert.equal(spaces.closed, false);
    assert.deepEqual(spaces.push(Buffer.from('{"Width":1,"Height":2}')).map(String), ['{"Width":1,"Height":2}']);

    const reader = new ResizeReader();
    assert.deepEqual(reader.push(packedResizes(MiB, { width: 321, height: 54 })), { width: 321, height: 54 }, 'the last size of the chunk wins');
    assert.equal(reader.scannedBytes, MiB);
  });

  it('joins a character cut between chunks before decoding it', () => {
    const text = Buffer.from('{"Width":7,"Height":8,"note":"é€😀"}');
    const cut = text.indexOf(Buffer.from('€')) + 1;
    const s = new JsonMessageSplitter();
    assert.deepEqual(s.push(text.subarray(0, cut)), []);
    const [message] = s.push(text.subarray(cut));
    assert.equal(message!.toString('utf8'), text.toString('utf8'));
    assert.deepEqual(parseResize(message!.toString('utf8')), { width: 7, height: 8 });
  });

  it('closes past MAX_JSON_MESSAGE_BYTES held for one object, in one push or many, and reads nothing after', () => {
    const many = new JsonMessageSplitter();
    assert.deepEqual(many.push(Buffer.from('{"Width":1,"Height":2}{"Width":')), [Buffer.from('{"Width":1,"Height":2}')]);
    for (let i = 0; i < MAX_JSON_MESSAGE_BYTES && !many.closed; i++) many.push(Buffer.from(' '));
    assert.equal(many.closed, true);
    assert.deepEqual(many.push(Buffer.from('3,"Height":4}')), []);

    const one = new ResizeReader();
    const huge = Buffer.from(`{"Width":5,"Height":6}{"Width":${' '.repeat(MiB)}1,"Height":1}{"Width":9,"Height":9}`);
    assert.deepEqual(one.push(huge), { width: 5, height: 6 }, 'what came whole before the oversized object counts');
    assert.equal(one.closed, true);
    assert.equal(one.push(Buffer.from('{"Width":3,"Height":4}')), undefined);
  });

  it('keeps the latest size until its listener comes, and reads nothing once closed for want of a terminal', () => {
    const got: TerminalSize[] = [];
    const listener: ResizeListener = { size: (s) => void got.push(s), overflow: () => assert.fail('no overflow') };
    const feed = new ResizeFeed(true);
    feed.push(Buffer.from('{"Width":1,"Height":1}'));
    feed.push(Buffer.from('{"Width":2,"Height":2}'));
    feed.take(listener);
    feed.push(Buffer.from('{"Width":3,"Height":3}{"Width":0,"Height":3}'));
    assert.deepEqual(got, [{ width: 2, height: 2 }, { width: 3, height: 3 }], 'an out-of-range size is dropped');

    const none = new ResizeFeed(true);
    none.take(undefined);
    assert.equal(none.open, false);
    assert.equal(none.push(Buffer.from('{"Width":1,"Height":1}')), false);
  });
});

/** A resize function whose calls the test answers, counting those in flight. */
function slowResize() {
  const calls: TerminalSize[] = [];
  const pending: Array<() => void> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  return {
    calls,
    get maxInFlight() {
      return maxInFlight;
    },
    resize: (size: TerminalSize) => {
      calls.push(size);
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      return new Promise<void>((resolve) =>
        pending.push(() => {
          inFlight--;
          resolve();
        }),
      );
    },
    answerAll: () => {
      for (const answer of pending.splice(0)) answer();
    },
  };
}

describe('the resize coalescer', () => {
  it('keeps one call in flight and sends the latest size when it returns', async () => {
    const docker = slowResize();
    const c = new ResizeCoalescer(docker.resize, recordingLogger().log, 0);
    for (let i = 1; i <= 43_690; i++) c.size({ width: 1 + (i % 1000), height: 1 + (i % 100) });
    c.size({ width: 200, height: 60 });
    assert.equal(docker.calls.length, 1);
    docker.answerAll();
    await waitFor('the latest size to be sent', () => docker.calls.length === 2, { intervalMs: 1 });
    assert.deepEqual(docker.calls[1], { width: 200, height: 60 });
    docker.answerAll();
    c.size({ width: 200, height: 60 });
    await new Promise((r) => setImmediate(r));
    assert.equal(docker.calls.length, 2, 'the size Docker has is not sent again');
    assert.equal(docker.maxInFlight, 1);
    c.stop();
  });

  it(`starts calls at least ${MIN_RESIZE_INTERVAL_MS} ms apart, however fast sizes come and calls return`, async () => {
    const calls: number[] = [];
    const c = new ResizeCoalescer(async () => void calls.push(Date.now()), recordingLogger().log);
    const start = Date.now();
    let n = 0;
    await waitFor('350 ms of sizes', () => {
      for (let i = 0; i < 1000; i++) c.size({ width: 1 + (n++ % 2), height: 10 });
      return Date.now() - start >= 350;
    }, { intervalMs: 1 });
    c.stop();
    const elapsed = Date.now() - start;
    console.log(`coalescer: ${n} sizes in ${elapsed} ms -> ${calls.length} resize calls`);
    assert.ok(calls.length >= 2, 'sizes keep being sent');
    assert.ok(calls.length <= Math.floor(elapsed / MIN_RESIZE_INTERVAL_MS) + 1, `${calls.length} calls in ${elapsed} ms`);
    for (let i = 1; i < calls.length; i++) assert.ok(calls[i]! - calls[i - 1]! >= MIN_RESIZE_INTERVAL_MS - 1);
  });

  it('logs an overflow once', () => {
    const { log, lines } = recordingLogger();
    const c = new ResizeCoalescer(async () => undefined, log);
    c.overflow();
    c.overflow();
    assert.equal(lines().filter((l) => /resize channel closed/.test(l.msg)).length, 1);
  });
});

/** Docker's side of an exec or attach: output the test ends, input it records. */
class FakeConnection extends Duplex {
  stdin = '';
  override _read(): void {}
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.stdin += chunk.toString();
    done();
  }
}

/** The fake Docker, with exec and attach modelled as far as sessions need, and resizes counted and held. */
class TerminalDocker extends FakeDocker {
  readonly connections: FakeConnection[] = [];
  readonly resizer = slowResize();
  override readonly createExec = async (..._args: unknown[]): Promise<string> => 'e'.repeat(64);
  override readonly startExec = async (..._args: unknown[]): Promise<Duplex> => this.connect();
  override readonly attachContainer = async (..._args: unknown[]): Promise<Duplex> => this.connect();
  override readonly inspectExec = async (..._args: unknown[]): Promise<ExecInspect> => ({ Running: false, ExitCode: 0 }) as ExecInspect;
  override readonly resizeExec = (...args: unknown[]): Promise<void> => this.resizer.resize(args[1] as TerminalSize);
  override readonly resizeContainer = (...args: unknown[]): Promise<void> => this.resizer.resize(args[1] as TerminalSize);

  private connect(): FakeConnection {
    const c = new FakeConnection();
    this.connections.push(c);
    return c;
  }
}

describe('resizes through the streaming server to a fake Docker', () => {
  let docker: TerminalDocker;
  let server: StreamingServer;
  const containerId = 'c'.repeat(64);
  const exec = (tty: boolean) => server.urlFor({ kind: 'exec', containerId, sandboxId: 'pod-of-' + containerId, cmd: ['sh'], stdin: true, stdout: true, stderr: false, tty });
  const last = { width: 222, height: 66 };

  before(async () => {
    docker = new TerminalDocker();
    server = new StreamingServer({ bindAddress: '127.0.0.1:0', docker, log: recordingLogger().log });
    await server.listen();
  });
  after(() => server.close());

  /** Waits until Docker's connection got `marker` on stdin: what the client sent before it was read. */
  const stdinReached = (marker: string) =>
    waitFor(`stdin ${marker}`, () => docker.connections.at(-1)?.stdin.includes(marker), { timeoutMs: 20_000, intervalMs: 5 });

  it('WebSocket: a TTY session makes one call at a time for 65,536 one-byte messages and a 1 MiB one, the last size last', async () => {
    const ws = await wsConnect(exec(true), ['v4.channel.k8s.io']);
    const bytes = packedResizes(64 * 1024, { width: 111, height: 33 });
    for (let i = 0; i < bytes.length; i++) ws.send(4, bytes.subarray(i, i + 1));
    ws.send(4, packedResizes(MiB - 1, last));
    ws.send(0, 'after-floods');
    await stdinReached('after-floods');
    const heldCalls = docker.resizer.calls.length;
    await waitFor('the last size to reach Docker', () => {
      docker.resizer.answerAll();
      return docker.resizer.calls.at(-1)?.width === last.width;
    }, { timeoutMs: 5_000, intervalMs: 5 });
    console.log(`WebSocket TTY floods: ${docker.resizer.calls.length} resize call(s), at most ${docker.resizer.maxInFlight} in flight`);
    assert.equal(heldCalls, 1, 'one call while the first is held');
    assert.deepEqual(docker.resizer.calls.at(-1), last);
    assert.ok(docker.resizer.calls.length <= 2, 'the held call, then the latest size');
    assert.equal(docker.resizer.maxInFlight, 1);
    docker.resizer.answerAll();
    docker.connections.at(-1)!.push(null);
    await ws.done;
  });

  it('WebSocket: a session without a TTY ignores channel 4', async () => {
    const before = docker.resizer.calls.length;
    const ws = await wsConnect(exec(false), ['v4.channel.k8s.io']);
    ws.send(4, packedResizes(MiB - 1, last));
    ws.send(4, resizeText(10, 10));
    ws.send(0, 'no-tty');
    await stdinReached('no-tty');
    assert.equal(docker.resizer.calls.length, before);
    docker.connections.at(-1)!.push(null);
    await ws.done;
  });

  it('SPDY: a TTY session makes one call at a time for 65,536 one-byte frames and a 1 MiB one, the last size last', async () => {
    docker.resizer.answerAll();
    const before = docker.resizer.calls.length;
    const spdyLast = { width: 333, height: 77 };
    const spdy = await rawSpdyConnect(exec(true), 'v4.channel.k8s.io');
    await spdy.open({ streamType: 'error' }, { fin: true });
    const stdin = await spdy.open({ streamType: 'stdin' });
    await spdy.open({ streamType: 'stdout' }, { fin: true });
    const resize = await spdy.open({ streamType: 'resize' });
    const start = Date.now();
    const bytes = packedResizes(64 * 1024, { width: 111, height: 33 });
    for (let i = 0; i < bytes.length; i++) spdy.write(resize, bytes.subarray(i, i + 1));
    spdy.write(resize, packedResizes(MiB, spdyLast));
    await waitFor('the last size to reach Docker', () => {
      docker.resizer.answerAll();
      return docker.resizer.calls.length > before && docker.resizer.calls.at(-1)?.width === spdyLast.width;
    }, { timeoutMs: 20_000, intervalMs: 20 });
    spdy.write(stdin, Buffer.from('after-spdy'));
    await stdinReached('after-spdy');
    const made = docker.resizer.calls.length - before;
    const elapsed = Date.now() - start;
    console.log(`SPDY TTY floods: ${made} resize call(s) in ${elapsed} ms, at most ${docker.resizer.maxInFlight} in flight`);
    assert.ok(made <= Math.floor(elapsed / MIN_RESIZE_INTERVAL_MS) + 1, `${made} resize calls in ${elapsed} ms`);
    assert.deepEqual(docker.resizer.calls.at(-1), spdyLast);
    assert.equal(docker.resizer.maxInFlight, 1);
    docker.connections.at(-1)!.push(null);
    await spdy.until('the session to end', () => spdy.closed || spdy.goAwayStatus !== undefined, 20_000);
    spdy.destroy();
  });

  it('SPDY: attach to a container without a TTY resets the resize stream (the request\'s tty notwithstanding)', async () => {
    const container = docker.addContainer({ State: { Running: true }, Config: { Tty: false } });
    const before = docker.resizer.calls.length;
    const url = server.urlFor({ kind: 'attach', containerId: container.Id, sandboxId: 'pod-of-' + container.Id, stdin: true, stdout: true, stderr: false, tty: true });
    const spdy = await rawSpdyConnect(url, 'v4.channel.k8s.io');
    await spdy.open({ streamType: 'error' }, { fin: true });
    const stdin = await spdy.open({ streamType: 'stdin' });
    await spdy.open({ streamType: 'stdout' }, { fin: true });
    const resize = await spdy.open({ streamType: 'resize' });
    spdy.write(resize, packedResizes(256 * 1024, last));
    await spdy.until('the resize stream to be reset', () => spdy.resetStatus(resize) !== undefined);
    assert.equal(spdy.resetStatus(resize), RST_CANCEL);
    spdy.write(stdin, Buffer.from('attached'));
    await stdinReached('attached');
    assert.equal(docker.resizer.calls.length, before);
    docker.connections.at(-1)!.push(null);
    spdy.destroy();
  });
});
