// The recorder is told when an ExecSync answer has been written out (src/grpc/grpc-server.ts),
// not when its handler returned: until then the answer's bytes are live, and the heap trim's
// look must come after. A client of raw HTTP/2 frames that grants no flow-control window holds
// the answer in the server; once it grants one, the answer goes out and the recorder hears.
import assert from 'node:assert/strict';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseEndpoint } from '../../../src/config/endpoint';
import { CriServer } from '../../../src/grpc/grpc-server';
import { silentLogger } from '../../../src/util/logger';
import { removePaths } from '../../support/cleanup';
import { waitFor } from '../../support/poll';
import { tempDir } from '../../support/temp';

/** Larger than HTTP/2's initial window (65,535 bytes), so that it waits for the client's window. */
const ANSWER_BYTES = 1024 * 1024;

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/** An HPACK string, literal (no Huffman), under 127 bytes. */
function hpackString(s: string): Buffer {
  return Buffer.concat([Buffer.from([s.length]), Buffer.from(s, 'latin1')]);
}

/** A unary call of `method` with an empty request on stream `id`: HEADERS, then DATA ending the stream. */
function unaryCall(id: number, method: string): Buffer {
  const headers = Buffer.concat([
    Buffer.from([0x83, 0x86]), // :method POST, :scheme http (HPACK's static table)
    Buffer.from([0x04]), // :path, a literal value
    hpackString(`/runtime.v1.RuntimeService/${method}`),
    Buffer.from([0x01]), // :authority
    hpackString('localhost'),
    Buffer.from([0x0f, 0x10]), // content-type (static index 31)
    hpackString('application/grpc'),
    Buffer.from([0x00]), // a literal name
    hpackString('te'),
    hpackString('trailers'),
  ]);
  return Buffer.concat([frame(0x1, 0x4, id, headers), frame(0x0, 0x1, id, Buffer.alloc(5))]);
}

function windowUpdate(streamId: number, bytes: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(bytes);
  return frame(0x8, 0, streamId, payload);
}

describe('the answer-written signal', () => {
  const dir = tempDir('answer-written');
  const observed: string[] = [];
  const written: string[] = [];
  const recorder = { observe: (rpc: string) => void observed.push(rpc), answerWritten: (rpc: string) => void written.push(rpc) };
  const server = new CriServer(
    {
      ExecSync: async () => ({ stdout: Buffer.alloc(ANSWER_BYTES, 0x61), stderr: Buffer.alloc(0), exitCode: 0 }),
      Version: async () => ({ version: '0.1.0', runtimeName: 'docker', runtimeVersion: '1', runtimeApiVersion: 'v1' }),
    },
    {},
    silentLogger(),
    undefined,
    recorder,
  );
  const endpoint = parseEndpoint(`unix://${path.join(dir, 'cri.sock')}`);
  let socket: net.Socket;
  let received = 0;

  before(async () => {
    await server.listen(endpoint);
    socket = net.connect(path.join(dir, 'cri.sock'));
    socket.on('data', (d: Buffer) => (received += d.length));
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(0x4, 0, 0, Buffer.alloc(0))]));
  });
  after(async () => {
    socket.destroy();
    await server.stop(1_000);
    removePaths(dir);
  });

  it('comes for ExecSync once its answer went out, not when its handler returned; never for other calls', async () => {
    socket.write(unaryCall(1, 'ExecSync'));
    socket.write(unaryCall(3, 'Version'));
    await waitFor('both handlers to return', () => observed.length === 2);
    // Version's whole answer goes out; ExecSync's only up to the window the client granted.
    await waitFor('the server to write what the window allows', () => received > 65_535);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(written, [], 'no answer written while the client grants no window');
    assert.ok(received < ANSWER_BYTES, `${received} bytes received`);
    socket.write(Buffer.concat([windowUpdate(0, 2 ** 31 - 1 - 65_535), windowUpdate(1, 2 ** 31 - 1 - 65_535)]));
    await waitFor('ExecSync\'s answer to be written', () => written.length > 0);
    await waitFor('the answer to arrive', () => received > ANSWER_BYTES);
    assert.deepEqual(written, ['ExecSync']);
    assert.deepEqual(observed.sort(), ['ExecSync', 'Version']);
  });
});
