// The bench's and checksum tests' cheap stream clients (test/support/lent-reads.ts) read into
// one reused buffer: their frame readers must give the same frames however the bytes are cut
// across reads, and must not keep views of a read past it (each read here is overwritten with
// garbage as soon as the reader returns, as the next read would). The upgrade's answer is read
// off a loopback server: 101 with the first stream bytes in the same read, and a refusal.
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, describe, it } from 'node:test';
import { ControlType, encodeControl, encodeData, FLAG_FIN, rstStreamPayload } from '../../../src/streaming/spdy/framing';
import { LentSpdyReader, LentWsReader, upgradeConnection, WS_OPCODE, WsProtocolError } from '../../support/lent-reads';

/** Feeds `bytes` to `push` in the reads `cuts` make, each read in one reused buffer that is spoiled once `push` returns. */
function feedInReusedBuffer(bytes: Buffer, cuts: readonly number[], push: (read: Buffer) => void): void {
  const buffer = Buffer.alloc(bytes.length);
  let from = 0;
  for (const to of [...cuts, bytes.length]) {
    if (to <= from) continue;
    bytes.copy(buffer, 0, from, to);
    push(buffer.subarray(0, to - from));
    buffer.fill(0xee);
    from = to;
  }
}

/** Every single cut, and every byte a read of its own. */
function cutsOf(length: number, everyOffset = (_: number): boolean => true): number[][] {
  const cuts: number[][] = [];
  for (let i = 1; i < length; i++) if (everyOffset(i)) cuts.push([i]);
  cuts.push(Array.from({ length }, (_, i) => i));
  return cuts;
}

describe('LentSpdyReader', () => {
  const synReply = encodeControl(ControlType.SynReply, 0, Buffer.from('0123456789abcdefghij'));
  const ping = encodeControl(ControlType.Ping, 0, Buffer.from([0, 0, 0, 2]));
  const out1 = Buffer.from(Array.from({ length: 300 }, (_, i) => i & 0xff));
  const out2 = Buffer.from('the end of stream one');
  const stream = Buffer.concat([
    synReply,
    encodeData(1, 0, out1),
    ping,
    encodeData(3, FLAG_FIN, Buffer.alloc(0)),
    encodeData(1, FLAG_FIN, out2),
    encodeControl(ControlType.RstStream, 0, rstStreamPayload(5, 5)),
  ]);

  function read(cuts: readonly number[]): { data: Map<number, Buffer>; fins: number[]; controls: Array<{ type: number; payload: Buffer }> } {
    const data = new Map<number, Buffer>();
    const fins: number[] = [];
    // Control payloads are kept as handed over: a reader that lent them would see them spoiled.
    const controls: Array<{ type: number; payload: Buffer }> = [];
    const reader = new LentSpdyReader({
      data(id, piece, fin) {
        data.set(id, Buffer.concat([data.get(id) ?? Buffer.alloc(0), piece]));
        if (fin) fins.push(id);
      },
      control: (type, _flags, payload) => controls.push({ type, payload }),
    });
    feedInReusedBuffer(stream, cuts, (r) => reader.push(r));
    return { data, fins, controls };
  }

  it('gives the same frames however the reads cut them, and keeps nothing of a read', () => {
    for (const cuts of cutsOf(stream.length)) {
      const got = read(cuts);
      const at = `cut at ${cuts.length === 1 ? cuts[0] : 'every byte'}`;
      assert.deepEqual(got.data.get(1), Buffer.concat([out1, out2]), at);
      assert.deepEqual(got.fins, [3, 1], at);
      assert.deepEqual(
        got.controls.map((c) => [c.type, c.payload.toString('hex')]),
        [
          [ControlType.SynReply, synReply.subarray(8).toString('hex')],
          [ControlType.Ping, '00000002'],
          [ControlType.RstStream, rstStreamPayload(5, 5).toString('hex')],
        ],
        at,
      );
    }
  });

  it('refuses a control frame of another SPDY version', () => {
    const v2 = encodeControl(ControlType.Ping, 0, Buffer.alloc(4));
    v2.writeUInt16BE(0x8002, 0);
    assert.throws(() => new LentSpdyReader({ data: () => undefined, control: () => undefined }).push(v2), /version 2/);
  });
});

/** One unmasked frame as a server sends it. */
function serverFrame(opcode: number, fin: boolean, payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.alloc(2) : n < 0x10000 ? Buffer.alloc(4) : Buffer.alloc(10);
  head[0] = (fin ? 0x80 : 0) | opcode;
  if (n < 126) head[1] = n;
  else if (n < 0x10000) {
    head[1] = 126;
    head.writeUInt16BE(n, 2);
  } else {
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(n), 2);
  }
  return Buffer.concat([head, payload]);
}

describe('LentWsReader', () => {
  const bytes = (n: number, seed: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff));
  const small = bytes(100, 1);
  const medium = bytes(300, 2);
  const a = bytes(50, 3);
  const b = bytes(60, 4);

  function read(stream: Buffer, cuts: readonly number[]): { data: Map<number, Buffer>; kept: Buffer[] } {
    const data = new Map<number, Buffer>();
    const kept: Buffer[] = [];
    const reader = new LentWsReader({
      data: (channel, piece) => data.set(channel, Buffer.concat([data.get(channel) ?? Buffer.alloc(0), piece])),
      // Kept as handed over: a reader that lent them would see them spoiled.
      control: (_opcode, payload) => kept.push(payload),
    });
    feedInReusedBuffer(stream, cuts, (r) => reader.push(r));
    return { data, kept };
  }

  it('gives each channel its bytes however the reads cut the frames (7 and 16-bit lengths, fragments, control frames between them)', () => {
    const stream = Buffer.concat([
      serverFrame(WS_OPCODE.binary, true, Buffer.concat([Buffer.from([1]), small])),
      // A fragmented message: its channel byte comes in the second fragment; a ping between fragments.
      serverFrame(WS_OPCODE.binary, false, Buffer.alloc(0)),
      serverFrame(WS_OPCODE.continuation, false, Buffer.concat([Buffer.from([2]), a])),
      serverFrame(WS_OPCODE.ping, true, Buffer.from('ping payload')),
      serverFrame(WS_OPCODE.continuation, true, b),
      serverFrame(WS_OPCODE.binary, true, Buffer.concat([Buffer.from([1]), medium])),
      serverFrame(WS_OPCODE.binary, true, Buffer.from([3])),
      serverFrame(WS_OPCODE.close, true, Buffer.from([0x03, 0xe8, 0x6f, 0x6b])),
    ]);
    for (const cuts of cutsOf(stream.length)) {
      const got = read(stream, cuts);
      const at = `cut at ${cuts.length === 1 ? cuts[0] : 'every byte'}`;
      assert.deepEqual(got.data.get(1), Buffer.concat([small, medium]), at);
      assert.deepEqual(got.data.get(2), Buffer.concat([a, b]), at);
      assert.equal(got.data.get(3), undefined, at);
      assert.deepEqual(
        got.kept.map((p) => p.toString('latin1')),
        ['ping payload', '\x03\xe8ok'],
        at,
      );
    }
  });

  it('reads a 64-bit length, cut anywhere in and around its head', () => {
    const big = bytes(70_000, 5);
    const stream = Buffer.concat([serverFrame(WS_OPCODE.binary, true, Buffer.concat([Buffer.from([1]), big])), serverFrame(WS_OPCODE.pong, true, Buffer.from('p'))]);
    assert.equal(stream[1], 127);
    for (const cuts of cutsOf(stream.length, (i) => i < 32 || i > stream.length - 32 || i % 4099 === 0)) {
      const got = read(stream, cuts);
      assert.ok(got.data.get(1)?.equals(big), `cut at ${cuts.length === 1 ? cuts[0] : 'every byte'}`);
      assert.deepEqual(got.kept, [Buffer.from('p')]);
    }
  });

  it('refuses what a server may not send', () => {
    const reading = (frame: Buffer) => () => new LentWsReader({ data: () => undefined, control: () => undefined }).push(frame);
    const masked = serverFrame(WS_OPCODE.binary, true, Buffer.from([1, 2]));
    masked[1] = masked[1]! | 0x80;
    assert.throws(reading(Buffer.concat([masked, Buffer.alloc(4)])), WsProtocolError);
    assert.throws(reading(serverFrame(WS_OPCODE.text, true, Buffer.from('1aGk='))), /text message/);
    assert.throws(reading(serverFrame(WS_OPCODE.continuation, true, Buffer.from([1]))), /outside a message/);
    assert.throws(reading(serverFrame(WS_OPCODE.ping, true, Buffer.alloc(126))), /control frame/);
    assert.throws(reading(Buffer.concat([serverFrame(WS_OPCODE.binary, false, Buffer.from([1])), serverFrame(WS_OPCODE.binary, true, Buffer.from([1]))])), /before the last one ended/);
    const rsv = serverFrame(WS_OPCODE.binary, true, Buffer.from([1]));
    rsv[0] = rsv[0]! | 0x40;
    assert.throws(reading(rsv), /reserved bits/);
  });
});

describe('upgradeConnection', () => {
  const servers: net.Server[] = [];
  after(() => servers.forEach((s) => s.close()));

  /** A loopback server that answers every request with `answer`'s writes, then writes `after` once the client sent `trigger`. */
  async function serving(answer: readonly Buffer[], then?: { trigger: string; send: Buffer }): Promise<{ url: string; requests: string[] }> {
    const requests: string[] = [];
    const server = net.createServer((socket) => {
      let got = '';
      socket.on('data', (d: Buffer) => {
        got += d.toString('latin1');
        if (requests.length === 0 && got.includes('\r\n\r\n')) {
          requests.push(got);
          for (const w of answer) socket.write(w);
        }
        if (then && got.includes(then.trigger)) socket.end(then.send);
      });
      socket.on('error', () => undefined);
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/exec/token?x=1`, requests };
  }

  it('reads the 101 head, then hands on the bytes that came with it and all that follow', async () => {
    const server = await serving([Buffer.from('HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-'), Buffer.from('Version: v4.channel.k8s.io\r\n\r\nfirst')], { trigger: 'next', send: Buffer.from('second') });
    const conn = await upgradeConnection(server.url, 'POST', { Upgrade: 'SPDY/3.1', Connection: 'Upgrade' });
    assert.equal(conn.head.statusCode, 101);
    assert.equal(conn.head.headers.get('x-stream-protocol-version'), 'v4.channel.k8s.io');
    assert.match(server.requests[0]!, /^POST \/exec\/token\?x=1 HTTP\/1\.1\r\nHost: 127\.0\.0\.1:\d+\r\nUpgrade: SPDY\/3\.1\r\nConnection: Upgrade\r\nContent-Length: 0\r\n\r\n$/);
    let got = '';
    const closed = new Promise((resolve) => conn.socket.once('close', resolve));
    conn.read((data) => (got += data.toString()));
    conn.socket.write('next');
    await closed;
    assert.equal(got, 'firstsecond');
  });

  it('rejects a refusal with its status and body', async () => {
    const server = await serving([Buffer.from('HTTP/1.1 403 Forbidden\r\nContent-Length: 12\r\n\r\nnot allowed!')]);
    await assert.rejects(upgradeConnection(server.url, 'GET', { Upgrade: 'websocket' }), (err: Error & { status?: number; body?: string }) => err.status === 403 && err.body === 'not allowed!');
  });
});
