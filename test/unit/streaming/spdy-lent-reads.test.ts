// A SPDY client's connection read into reused buffers (src/util/lent-reads.ts, issue 44): the
// socket the HTTP server accepted is taken over by one that reads into buffers of ours, and a
// read's buffer is read into again only once the data it carried has left for Docker. Node
// read each into a fresh 64 KiB buffer, whose external memory set off a mark-compact every few
// tens of MiB of stdin.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as http from 'node:http';
import * as net from 'node:net';
import { Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { ExecInspect } from '../../../src/docker/types';
import { CLIENT_LENT_READS } from '../../../src/streaming/limits';
import { encodeData } from '../../../src/streaming/spdy/framing';
import { StreamingServer } from '../../../src/streaming/streaming-server';
import { LentReadConnection } from '../../../src/util/lent-reads';
import { FakeDocker } from '../../support/fake-docker';
import { waitFor } from '../../support/poll';
import { recordingLogger } from '../../support/recording-logger';
import { rawSpdyConnect } from '../../support/streaming-clients';

const MiB = 1024 * 1024;

describe('LentReadConnection: an accepted connection taken over', () => {
  it('reads what the client sends into reused buffers, writes and closes as the socket it replaced, and lets its server close', async (t) => {
    const server = http.createServer();
    t.after(() => server.close());
    const received = createHash('sha256');
    const buffers = new Set<ArrayBufferLike>();
    let lent: LentReadConnection | undefined;
    server.on('upgrade', (_req, accepted: net.Socket) => {
      accepted.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n');
      lent = LentReadConnection.take(accepted, 2);
      assert.ok(lent, 'taken over');
      const socket = lent.socket;
      // As the SPDY session reads: given back a turn later, the socket paused while all are out.
      const taken = lent;
      taken.read(
        (data, giveBack) => {
          received.update(data);
          buffers.add(data.buffer);
          if (taken.exhausted) socket.pause();
          setImmediate(() => giveBack(true));
        },
        () => socket.resume(),
      );
      socket.on('end', () => socket.end('bye'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const sent = createHash('sha256');
    {
      const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
      client.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n');
      let answer = '';
      client.on('data', (d: Buffer) => (answer += d.toString('latin1')));
      await waitFor('the upgrade', () => answer.includes('\r\n\r\n'));
      for (let i = 0; i < 256; i++) {
        const chunk = Buffer.alloc(64 * 1024, i);
        sent.update(chunk);
        if (!client.write(chunk)) await new Promise((r) => client.once('drain', r));
      }
      client.end();
      await new Promise((resolve) => client.once('close', resolve));
      assert.match(answer, /bye$/);
    }
    assert.equal(received.digest('hex'), sent.digest('hex'));
    console.log(`16 MiB read into ${buffers.size} buffers`);
    assert.ok(buffers.size <= 2 + 1, `${buffers.size} read buffers`);
    await waitFor('the taken socket closed', () => lent?.socket.destroyed === true);
    // The replaced socket no longer counts as the server's: close completes.
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});

/** Docker's side of an exec's stdin: hashes what it gets, completing each write a turn later, as a socket may. */
class HashingConnection extends Duplex {
  readonly hash = createHash('sha256');
  /** The memory the chunks were views of. */
  readonly buffers = new Set<ArrayBufferLike>();
  bytes = 0;
  override _read(): void {}
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.hash.update(chunk);
    if (chunk.length > 0) this.buffers.add(chunk.buffer);
    this.bytes += chunk.length;
    setImmediate(done);
  }
}

class StdinDocker extends FakeDocker {
  readonly connections: HashingConnection[] = [];
  override readonly createExec = async (..._args: unknown[]): Promise<string> => 'e'.repeat(64);
  override readonly startExec = async (..._args: unknown[]): Promise<Duplex> => {
    const c = new HashingConnection();
    this.connections.push(c);
    return c;
  };
  override readonly inspectExec = async (..._args: unknown[]): Promise<ExecInspect> => ({ Running: false, ExitCode: 0 }) as ExecInspect;
}

describe('SPDY stdin from lent reads', () => {
  let docker: StdinDocker;
  let server: StreamingServer;
  const containerId = 'c'.repeat(64);

  before(async () => {
    docker = new StdinDocker();
    server = new StreamingServer({ bindAddress: '127.0.0.1:0', docker, log: recordingLogger().log });
    await server.listen();
  });
  after(() => server.close());

  it('hands Docker every byte intact, its reads from a few reused buffers', async () => {
    const total = 32 * MiB;
    const sent = createHash('sha256');
    const url = server.urlFor({ kind: 'exec', containerId, sandboxId: 'pod-of-' + containerId, cmd: ['cat'], stdin: true, stdout: true, stderr: false, tty: false });
    const spdy = await rawSpdyConnect(url, 'v4.channel.k8s.io');
    await spdy.open({ streamType: 'error' }, { fin: true });
    const stdin = await spdy.open({ streamType: 'stdin' });
    await spdy.open({ streamType: 'stdout' }, { fin: true });
    const c = await waitFor('the exec to start', () => docker.connections.at(-1));
    // Each frame's bytes differ from the next one's, so a buffer read into too soon shows.
    for (let i = 0, at = 0; at < total; i++, at += 32 * 1024) {
      const chunk = Buffer.alloc(32 * 1024, i % 251);
      sent.update(chunk);
      if (!spdy.socket.write(encodeData(stdin, 0, chunk))) await new Promise((r) => spdy.socket.once('drain', r));
    }
    await waitFor(`${total} bytes in Docker`, () => c.bytes === total, { timeoutMs: 30_000 });
    c.push(null);
    spdy.socket.destroy();
    assert.equal(c.hash.digest('hex'), sent.digest('hex'));
    console.log(`32 MiB of stdin from ${c.buffers.size} read buffers`);
    // Node's own reads: a buffer each, some 500 for 32 MiB.
    assert.ok(c.buffers.size <= 2 * CLIENT_LENT_READS + 1, `${c.buffers.size} read buffers`);
  });
});
