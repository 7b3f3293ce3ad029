// The SPDY session's bounds, over a loopback TCP pair with a client that sends frames as told:
// window granted only as the reader takes data, the connection not read past a stream's bound
// (for clients that ignore windows), our sending held by the client's windows only once it shows
// it keeps them, streams refused past the session's bound, oversized control frames, idleness,
// and a gone client noticed while the connection is not read.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import * as net from 'node:net';
import { afterEach, describe, it } from 'node:test';
import { STREAM_BUFFER_BYTES } from '../../../../src/streaming/limits';
import {
  ControlType,
  encodeControl,
  encodeData,
  GOAWAY_PROTOCOL_ERROR,
  MAX_CONTROL_FRAME_PAYLOAD,
  RST_CANCEL,
  RST_REFUSED_STREAM,
  rstStreamPayload,
  SETTINGS_INITIAL_WINDOW_SIZE,
  windowUpdatePayload,
} from '../../../../src/streaming/spdy/framing';
import { MAX_REFUSED_STREAMS, SpdyServerSession, type SpdySessionOptions, type SpdyStream } from '../../../../src/streaming/spdy/session';
import { RawSpdyClient } from '../../../support/raw-spdy';

const KiB = 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Pair {
  session: SpdyServerSession;
  client: RawSpdyClient;
  serverSocket: net.Socket;
  streams: SpdyStream[];
}

const open: Pair[] = [];

async function connect(options: Partial<SpdySessionOptions> = {}): Promise<Pair> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepted = once(server, 'connection');
  const clientSocket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  const [serverSocket] = (await accepted) as [net.Socket];
  server.close();
  const session = new SpdyServerSession(serverSocket, { maxStreams: 10, idleTimeoutMs: 0, ...options });
  const streams: SpdyStream[] = [];
  session.on('stream', (s) => streams.push(s));
  const pair = { session, client: new RawSpdyClient(clientSocket), serverSocket, streams };
  open.push(pair);
  return pair;
}

afterEach(() => {
  for (const p of open.splice(0)) {
    p.client.destroy();
    p.serverSocket.destroy();
  }
});

function settings(initialWindow: number): Buffer {
  const b = Buffer.alloc(12);
  b.writeUInt32BE(1, 0);
  b.writeUInt32BE(SETTINGS_INITIAL_WINDOW_SIZE, 4);
  b.writeUInt32BE(initialWindow, 8);
  return b;
}

describe('SPDY session bounds', () => {
  it('grants window back only as the reader takes data', async () => {
    const { client, streams } = await connect();
    const id = await client.open({ streamType: 'stdin' });
    client.write(id, Buffer.alloc(32 * KiB));
    client.write(id, Buffer.alloc(32 * KiB));
    await sleep(100);
    assert.equal(client.windowUpdates.get(id), undefined, 'nothing granted while nothing is read');
    assert.equal(streams[0]!.unread, 64 * KiB);
    let taken = 0;
    streams[0]!.on('data', (d: Buffer) => (taken += d.length));
    await client.until('the window back', () => client.windowUpdates.get(id) === 64 * KiB && client.windowUpdates.get(0) === 64 * KiB);
    assert.equal(taken, 64 * KiB);
  });

  it('grants back what the reads of one poll turn brought in one WINDOW_UPDATE pair, not a pair a read', async () => {
    const { client, streams, serverSocket } = await connect();
    const id = await client.open({ streamType: 'stdin' });
    let taken = 0;
    streams[0]!.on('data', (d: Buffer) => (taken += d.length));
    // Four reads of 32 KiB frames in one poll phase, each read's callback in its own tick, as
    // libuv hands them on (up to 32 reads a turn).
    await new Promise<void>((resolve) => {
      let i = 0;
      const read = (): void => {
        if (i++ === 4) return resolve();
        serverSocket.emit('data', encodeData(id, 0, Buffer.alloc(32 * KiB)));
        process.nextTick(read);
      };
      read();
    });
    await client.until('the window back', () => client.windowUpdates.get(id) === 128 * KiB && client.windowUpdates.get(0) === 128 * KiB);
    console.log(`4 reads of 32 KiB in one turn: ${client.windowUpdateFrames} WINDOW_UPDATE frames`);
    assert.equal(taken, 128 * KiB);
    assert.equal(client.windowUpdateFrames, 2, 'one for the stream, one for the session');
  });

  it('does not read a client that ignores windows past a stream bound of unread data, and reads on as the reader takes it', async () => {
    const { client, streams, serverSocket } = await connect();
    const id = await client.open({ streamType: 'stdin' });
    const total = 4 * 1024 * KiB;
    const frame = Buffer.alloc(32 * KiB, 0x78);
    for (let sent = 0; sent < total; sent += frame.length) client.write(id, frame);
    await sleep(300);
    const held = streams[0]!.unread;
    const read = serverSocket.bytesRead;
    // The bound, plus what was left of the one read of the connection that crossed it.
    assert.ok(held <= STREAM_BUFFER_BYTES + 64 * KiB, `the stream holds ${held} bytes`);
    assert.ok(read < 512 * KiB, `the session read ${read} of ${total} bytes while nobody read the stream`);
    let taken = 0;
    const all = new Promise<void>((resolve) =>
      streams[0]!.on('data', (d: Buffer) => {
        taken += d.length;
        if (taken === total) resolve();
      }),
    );
    await all;
    assert.equal(taken, total);
  });

  it('sends regardless of windows to a client that keeps none, and within them once it shows it does', async () => {
    const plain = await connect();
    await plain.client.open({ streamType: 'stdout' });
    plain.streams[0]!.write(Buffer.alloc(200 * KiB));
    await plain.client.until('all 200 KiB', () => plain.client.dataOf(1).length === 200 * KiB);

    const counting = await connect();
    counting.client.control(ControlType.Settings, settings(48 * KiB));
    counting.client.control(ControlType.WindowUpdate, windowUpdatePayload(0, 1024 * KiB));
    const id = await counting.client.open({ streamType: 'stdout' });
    let written = false;
    counting.streams[0]!.write(Buffer.alloc(200 * KiB), () => (written = true));
    await counting.client.until('the first window', () => counting.client.dataOf(id).length === 48 * KiB);
    await sleep(100);
    assert.equal(counting.client.dataOf(id).length, 48 * KiB, 'nothing past the window');
    assert.equal(written, false);
    counting.client.control(ControlType.WindowUpdate, windowUpdatePayload(id, 100 * KiB));
    await counting.client.until('the next window', () => counting.client.dataOf(id).length === 148 * KiB);
    counting.client.control(ControlType.WindowUpdate, windowUpdatePayload(id, 100 * KiB));
    await counting.client.until('the rest', () => counting.client.dataOf(id).length === 200 * KiB);
    for (let i = 0; i < 100 && !written; i++) await sleep(10);
    assert.equal(written, true, 'the write completes once all of it went out');
  });

  it('sends the frames written in one turn of the event loop, all streams together, in one write to the socket', async () => {
    const { client, streams, serverSocket } = await connect();
    const out = await client.open({ streamType: 'stdout' });
    const err = await client.open({ streamType: 'stderr' });
    // Every write the socket makes to the kernel, one buffer or many.
    let writes = 0;
    const socket = serverSocket as unknown as Record<'_write' | '_writev', (...args: unknown[]) => void>;
    for (const method of ['_write', '_writev'] as const) {
      const original = socket[method]!.bind(serverSocket);
      socket[method] = (...args: unknown[]) => {
        writes++;
        original(...args);
      };
    }
    // As one read of Docker's connection hands them on: three pieces of stdout, one of stderr.
    const [stdout, stderr] = streams;
    for (let i = 0; i < 3; i++) stdout!.write(Buffer.alloc(20 * KiB, 0x61 + i));
    stderr!.write(Buffer.from('oops'));
    await client.until('all of it', () => client.dataOf(out).length === 60 * KiB && client.dataOf(err).length === 4);
    assert.equal(writes, 1, `${writes} writes to the socket`);
    assert.deepEqual(client.dataOf(out), Buffer.concat([0x61, 0x62, 0x63].map((b) => Buffer.alloc(20 * KiB, b))));
  });

  it('refuses streams past its bound and when nobody takes them, and cancels a stream destroyed half-way', async () => {
    const { client, session, streams } = await connect({ maxStreams: 2 });
    const a = await client.open({ streamType: 'data' });
    await client.open({ streamType: 'data' });
    const c = await client.open({ streamType: 'data' });
    assert.equal(client.resetStatus(c), RST_REFUSED_STREAM);
    assert.equal(client.replied(c), false);
    assert.equal(session.openStreams, 2);
    streams[0]!.destroy();
    await client.until('RST_STREAM CANCEL', () => client.resetStatus(a) === RST_CANCEL);
    session.removeAllListeners('stream');
    const d = await client.open({ streamType: 'data' });
    assert.equal(client.resetStatus(d), RST_REFUSED_STREAM);
    // Data for refused streams is dropped.
    client.write(d, Buffer.alloc(10 * KiB));
    await client.until('the session window back', () => client.windowUpdates.get(0) === 10 * KiB);
    assert.equal(session.openStreams, 1);
  });

  it('ends the session with GOAWAY PROTOCOL_ERROR once it refused its bound of streams the protocol does not allow; streams past the open bound are refused, not counted', async () => {
    const { client, session } = await connect({ maxStreams: 2 });
    session.on('stream', (s) => {
      if (s.header('streamType') === 'bogus') s.refuse();
    });
    const kept = [await client.open({ streamType: 'stdin' }), await client.open({ streamType: 'stdout' })];
    // Past the bound of open streams (a busy port forward): refused, and the session goes on.
    const busy: number[] = [];
    while (busy.length < MAX_REFUSED_STREAMS * 2) busy.push(await client.open({ streamType: 'stdin' }));
    assert.deepEqual(busy.map((id) => client.resetStatus(id)), Array(MAX_REFUSED_STREAMS * 2).fill(RST_REFUSED_STREAM));
    // The client resets one of its streams, which makes room; what whoever takes the session's
    // streams refuses counts.
    client.control(ControlType.RstStream, rstStreamPayload(kept[1]!, RST_CANCEL));
    const refused: number[] = [];
    while (refused.length < MAX_REFUSED_STREAMS - 1) refused.push(await client.open({ streamType: 'bogus' }));
    assert.deepEqual(refused.map((id) => client.resetStatus(id)), Array(MAX_REFUSED_STREAMS - 1).fill(RST_REFUSED_STREAM));
    assert.equal(client.resetStatus(kept[0]!), undefined);
    assert.equal(session.isClosed, false);
    assert.equal(client.goAwayStatus, undefined);
    const last = await client.open({ streamType: 'bogus' });
    assert.equal(client.resetStatus(last), RST_REFUSED_STREAM);
    await client.until('GOAWAY', () => client.goAwayStatus !== undefined);
    assert.equal(client.goAwayStatus, GOAWAY_PROTOCOL_ERROR);
    assert.equal(session.isClosed, true);
    await client.until('the connection to close', () => client.closed);
  });

  it('ends the session with GOAWAY PROTOCOL_ERROR on a control frame over its bound, before reading it', async () => {
    const { client, session, serverSocket } = await connect();
    const head = encodeControl(ControlType.SynStream, 0, Buffer.alloc(0));
    head.writeUIntBE(MAX_CONTROL_FRAME_PAYLOAD + 1, 5, 3);
    client.socket.write(head);
    await client.until('GOAWAY', () => client.goAwayStatus !== undefined);
    assert.equal(client.goAwayStatus, GOAWAY_PROTOCOL_ERROR);
    assert.equal(session.isClosed, true);
    assert.ok(serverSocket.bytesRead <= 64 * KiB);
  });

  it('closes a session idle for its timeout, and not one in use', async () => {
    const busy = await connect({ idleTimeoutMs: 300 });
    const idle = await connect({ idleTimeoutMs: 300 });
    const id = await busy.client.open({ streamType: 'stdout' });
    for (let i = 0; i < 8; i++) {
      await sleep(100);
      busy.streams[0]!.write('tick');
    }
    assert.equal(idle.client.goAwayStatus, 0);
    await idle.client.until('the idle session to close', () => idle.client.closed);
    assert.equal(busy.session.isClosed, false);
    await busy.client.until('every tick', () => busy.client.dataOf(id).toString() === 'tick'.repeat(8));
  });

  it('notices a client gone while the connection is not read, by the pings it sends meanwhile', async () => {
    const { client, session } = await connect({ pausedProbeMs: 50 });
    const id = await client.open({ streamType: 'stdin' });
    const frame = Buffer.alloc(32 * KiB);
    for (let i = 0; i < 64; i++) client.write(id, frame);
    await sleep(200);
    const closed = once(session, 'close');
    client.destroy();
    await Promise.race([closed, sleep(3000).then(() => assert.fail('the session did not notice its client had gone'))]);
  });
});
