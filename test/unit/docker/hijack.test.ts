// Exec and attach on a connection of our own (src/docker/hijack.ts): the answer's head parsed,
// error answers as the client classifies them, and reads lent from a few reused buffers, with
// no buffer allocated per read and no reading while every buffer is out.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  hijackRequest,
  HijackProtocolError,
  LENT_READ_BUFFERS,
  MAX_HIJACK_HEAD_BYTES,
  openHijack,
  parseHijackHead,
  type HijackAnswerError,
  type HijackedConnection,
} from '../../../src/docker/hijack';
import { READ_BUFFER_BYTES } from '../../../src/util/lent-reads';
import { waitFor } from '../../support/poll';

const UPGRADED = 'HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n';
const STATUS = { 101: true, 200: true, 404: 'no such exec instance' } as const;

describe('the hijack answer head', () => {
  it('waits for the whole head, then gives status, headers and where the stream starts', () => {
    const wire = Buffer.from(`${UPGRADED}\u0001\u0000\u0000\u0000`, 'latin1');
    assert.equal(parseHijackHead(wire.subarray(0, 20)), undefined);
    const head = parseHijackHead(wire)!;
    assert.equal(head.statusCode, 101);
    assert.equal(head.reason, 'UPGRADED');
    assert.equal(head.headers.get('content-type'), 'application/vnd.docker.multiplexed-stream');
    assert.equal(head.bodyStart, UPGRADED.length);
  });

  it('refuses what is not HTTP/1.x, a malformed header and an endless head', () => {
    assert.throws(() => parseHijackHead(Buffer.from('SSH-2.0-x\r\n\r\n')), HijackProtocolError);
    assert.throws(() => parseHijackHead(Buffer.from('HTTP/1.1 200 OK\r\nno colon here\r\n\r\n')), HijackProtocolError);
    assert.throws(() => parseHijackHead(Buffer.alloc(MAX_HIJACK_HEAD_BYTES + 1, 0x61)), HijackProtocolError);
    assert.throws(() => parseHijackHead(Buffer.from(`HTTP/1.1 200 OK\r\nX: ${'a'.repeat(MAX_HIJACK_HEAD_BYTES)}\r\n\r\n`)), HijackProtocolError);
  });

  it('writes the request as docker-modem did: POST, JSON body, Upgrade: tcp', () => {
    const text = hijackRequest('/exec/abc/start', { Detach: false, Tty: false }).toString('latin1');
    assert.match(text, /^POST \/exec\/abc\/start HTTP\/1\.1\r\n/);
    assert.match(text, /\r\nUpgrade: tcp\r\n/);
    assert.match(text, /\r\nContent-Length: 28\r\n\r\n\{"Detach":false,"Tty":false\}$/);
  });
});

describe('a hijacked connection', () => {
  let dir: string;
  let server: net.Server;
  /** What the server does with each connection once it has the request. */
  let answer: (socket: net.Socket) => void = () => undefined;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hijack-'));
    server = net.createServer((socket) => socket.once('data', () => answer(socket)));
    await new Promise<void>((resolve) => server.listen(path.join(dir, 'docker.sock'), resolve));
  });
  after(() => {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const endpoint = (): { kind: 'unix'; path: string; url: string } => ({ kind: 'unix', path: path.join(dir, 'docker.sock'), url: `unix://${dir}/docker.sock` });

  it('lends 64 MiB of reads from at most LENT_READ_BUFFERS + 1 buffers, bytes intact', async () => {
    const total = 64 * 1024 * 1024;
    const sent = createHash('sha256');
    answer = (socket) => {
      socket.write(UPGRADED);
      let left = total;
      let n = 0;
      const more = (): void => {
        while (left > 0) {
          const chunk = Buffer.alloc(Math.min(left, 48 * 1024), n++ % 251);
          sent.update(chunk);
          left -= chunk.length;
          if (!socket.write(chunk)) return void socket.once('drain', more);
        }
        socket.end();
      };
      more();
    };
    const connection = await openHijack(endpoint(), hijackRequest('/exec/x/start', {}), STATUS, undefined);
    const got = createHash('sha256');
    const buffers = new Set<ArrayBufferLike>();
    let bytes = 0;
    let reads = 0;
    // What came with the head is handed on at once, a copy: only the reads after it are lent.
    let early = true;
    connection.lendReads((data, giveBack) => {
      got.update(data);
      bytes += data.length;
      reads++;
      if (!early) buffers.add(data.buffer);
      // Given back a turn later, as a channel's write completes.
      setImmediate(() => giveBack(true));
    });
    early = false;
    await new Promise((resolve) => connection.once('end', resolve));
    assert.equal(bytes, total);
    assert.equal(got.digest('hex'), sent.digest('hex'));
    console.log(`${reads} reads from ${buffers.size} buffers`);
    // Before (docker-modem's hijack, Node's own reads) every read was a new buffer.
    assert.ok(buffers.size <= LENT_READ_BUFFERS + 1, `${buffers.size} buffers for ${reads} reads`);
    connection.destroy();
  });

  it('reads no more while all its buffers are lent, and again once one comes back', async () => {
    let written = 0;
    answer = (socket) => {
      socket.write(UPGRADED);
      const chunk = Buffer.alloc(READ_BUFFER_BYTES, 1);
      const more = (): void => {
        while (written < 64 * READ_BUFFER_BYTES) {
          written += chunk.length;
          if (!socket.write(chunk)) return void socket.once('drain', more);
        }
        socket.end();
      };
      more();
    };
    const connection: HijackedConnection = await openHijack(endpoint(), hijackRequest('/x', {}), STATUS, undefined);
    const held: Array<(reusable: boolean) => void> = [];
    let bytes = 0;
    // What came with the head is handed on at once, a copy: only the reads after it are lent.
    let early = true;
    connection.lendReads((data, giveBack) => {
      bytes += data.length;
      if (!early) held.push(giveBack);
    });
    early = false;
    await waitFor('every buffer lent', () => held.length === LENT_READ_BUFFERS, { intervalMs: 5 });
    // Time for more reads, had the connection been read on.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(held.length, LENT_READ_BUFFERS);
    assert.ok(bytes <= (LENT_READ_BUFFERS + 1) * READ_BUFFER_BYTES);
    held.shift()!(false);
    await waitFor('one more read', () => held.length === LENT_READ_BUFFERS, { intervalMs: 5 });
    for (;;) {
      const next = held.shift();
      if (next) next(true);
      else if (connection.readableEnded) break;
      else await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(bytes, written);
    connection.destroy();
  });

  it('gives an error answer the status and the daemon\'s message, and a plain stream copies', async () => {
    answer = (socket) => {
      const body = '{"message":"No such exec instance: x"}\n';
      socket.end(`HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    };
    const err = (await openHijack(endpoint(), hijackRequest('/x', {}), STATUS, undefined).catch((e: unknown) => e)) as HijackAnswerError;
    assert.equal(err.statusCode, 404);
    assert.equal(err.json?.message, 'No such exec instance: x');

    answer = (socket) => socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\nhello`);
    const connection = await openHijack(endpoint(), hijackRequest('/x', {}), STATUS, undefined);
    let text = '';
    connection.on('data', (d: Buffer) => (text += d.toString()));
    await new Promise((resolve) => connection.once('end', resolve));
    assert.equal(text, 'hello');
  });

  it('rejects with the signal\'s reason when the caller gives up before the answer', async () => {
    answer = () => undefined;
    const controller = new AbortController();
    const pending = openHijack(endpoint(), hijackRequest('/x', {}), STATUS, controller.signal);
    controller.abort(new Error('gave up'));
    await assert.rejects(pending, /gave up/);
  });
});
