// The plain HTTP servers' own deadlines, which replace Node's 30 s connection-checking interval:
// a request sent a byte at a time is cut off, each keep-alive exchange gets a deadline of its
// own, an upgrade with nobody to take it is closed, and one that is taken is left to its taker.
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, describe, it } from 'node:test';
import { QuietHttpServer } from '../../../src/util/http-server';
import { waitFor } from '../../support/poll';

const DEADLINE_MS = 300;

async function connect(server: QuietHttpServer): Promise<{ socket: net.Socket; closed: () => boolean; received: () => string }> {
  const { port } = server.http.address() as net.AddressInfo;
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let closed = false;
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  socket.on('error', () => undefined);
  socket.once('close', () => (closed = true));
  return { socket, closed: () => closed, received: () => received };
}

describe('QuietHttpServer', () => {
  const servers: QuietHttpServer[] = [];
  after(() => Promise.all(servers.map((s) => s.close())));
  const serve = async (withUpgrade = false): Promise<QuietHttpServer> => {
    const server = new QuietHttpServer((_req, res) => res.end('ok'), 'test', DEADLINE_MS);
    if (withUpgrade) server.http.on('upgrade', (_req, socket: net.Socket) => socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n'));
    await server.listen('127.0.0.1:0');
    servers.push(server);
    return server;
  };

  it('refuses an address that is not host:port', async () => {
    await assert.rejects(new QuietHttpServer(() => undefined, 'test').listen('nowhere'), /test address "nowhere" is not host:port/);
  });

  it('cuts off a request whose headers never end, however steadily they trickle', async () => {
    const client = await connect(await serve());
    client.socket.write('GET / HTTP/1.1\r\n');
    let sent = 0;
    await waitFor('the connection to be cut off', () => {
      if (!client.closed()) client.socket.write(`X-${sent++}: y\r\n`);
      return client.closed();
    }, { timeoutMs: 10_000, intervalMs: 20 });
    assert.equal(client.received(), '', 'nothing was answered');
    assert.ok(sent > 3, `headers kept coming (${sent} lines) and the deadline still held`);
  });

  it('answers, then gives the next request on the same connection a deadline of its own', async () => {
    const client = await connect(await serve());
    client.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor('the first answer', () => client.received().includes('ok'));
    client.socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
    await waitFor('the half-sent second request to be cut off', () => client.closed(), { timeoutMs: 10_000 });
    assert.equal(client.received().match(/HTTP\/1.1 200/g)?.length, 1);
  });

  it('closes an upgrade nobody takes, and leaves one that is taken to its taker', async () => {
    const untaken = await connect(await serve());
    untaken.socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n');
    await waitFor('the untaken upgrade to be closed', () => untaken.closed());

    const taken = await connect(await serve(true));
    taken.socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n');
    await waitFor('the upgrade to be answered', () => taken.received().includes('101'));
    // An absence can only be watched for a while: three deadlines, and the upgraded connection is still open.
    await new Promise((r) => setTimeout(r, 3 * DEADLINE_MS));
    assert.equal(taken.closed(), false);
    taken.socket.destroy();
  });
});
