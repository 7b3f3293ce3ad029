// Stdin toward Docker in batches (issue 30 point 3): the frames one read of the client's
// connection brings leave in one write to Docker's connection, and while Docker's connection is
// busy the shim holds up to PIPE_BUFFER_BYTES for it, and no more. (stream.pipe wrote each frame
// on its own and stopped at 16 KiB.)
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { ExecInspect } from '../../../src/docker/types';
import { PIPE_BUFFER_BYTES } from '../../../src/streaming/limits';
import { encodeData } from '../../../src/streaming/spdy/framing';
import { StreamingServer } from '../../../src/streaming/streaming-server';
import { FakeDocker } from '../../support/fake-docker';
import { waitFor } from '../../support/poll';
import { recordingLogger } from '../../support/recording-logger';
import { rawSpdyConnect, wsConnect } from '../../support/streaming-clients';

const KiB = 1024;

/** Docker's side of an exec: counts the write calls stdin takes, and can hold them. */
class CountingConnection extends Duplex {
  /** Calls of _write and _writev: the chunks of data each took. */
  readonly calls: number[] = [];
  received: Buffer[] = [];
  maxUnwritten = 0;
  private held: (() => void) | undefined;
  holding = false;

  get bytes(): number {
    return this.received.reduce((n, b) => n + b.length, 0);
  }

  override write(chunk: Buffer, ...rest: never[]): boolean {
    const answer = super.write(chunk, ...rest);
    this.maxUnwritten = Math.max(this.maxUnwritten, this.writableLength);
    return answer;
  }

  override _read(): void {}

  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.record([chunk], done);
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, done: () => void): void {
    this.record(
      chunks.map((c) => c.chunk),
      done,
    );
  }

  release(): void {
    this.holding = false;
    const held = this.held;
    this.held = undefined;
    held?.();
  }

  private record(chunks: Buffer[], done: () => void): void {
    // (An empty chunk is the SPDY session asking when its lent read has been sent: no data.)
    this.calls.push(chunks.filter((c) => c.length > 0).length);
    this.received.push(...chunks.map((c) => Buffer.from(c)));
    if (this.holding) this.held = done;
    else done();
  }
}

class StdinDocker extends FakeDocker {
  readonly connections: CountingConnection[] = [];
  /** The next connection holds its first write until released. */
  holdFirstWrite = false;
  override readonly createExec = async (..._args: unknown[]): Promise<string> => 'e'.repeat(64);
  override readonly startExec = async (..._args: unknown[]): Promise<Duplex> => {
    const c = new CountingConnection();
    c.holding = this.holdFirstWrite;
    this.connections.push(c);
    return c;
  };
  override readonly inspectExec = async (..._args: unknown[]): Promise<ExecInspect> => ({ Running: false, ExitCode: 0 }) as ExecInspect;
}

/** `count` chunks of `size` bytes, chunk i filled with the byte i. */
const numbered = (count: number, size: number): Buffer[] => Array.from({ length: count }, (_, i) => Buffer.alloc(size, i & 0xff));

describe('stdin into Docker in batches', () => {
  let docker: StdinDocker;
  let server: StreamingServer;
  const containerId = 'c'.repeat(64);
  const exec = () => server.urlFor({ kind: 'exec', containerId, sandboxId: 'pod-of-' + containerId, cmd: ['cat'], stdin: true, stdout: true, stderr: false, tty: false });

  before(async () => {
    docker = new StdinDocker();
    server = new StreamingServer({ bindAddress: '127.0.0.1:0', docker, log: recordingLogger().log });
    await server.listen();
  });
  after(() => server.close());

  it('SPDY: the frames of one read of the connection go to Docker in one write', async () => {
    docker.holdFirstWrite = false;
    const spdy = await rawSpdyConnect(exec(), 'v4.channel.k8s.io');
    await spdy.open({ streamType: 'error' }, { fin: true });
    const stdin = await spdy.open({ streamType: 'stdin' });
    await spdy.open({ streamType: 'stdout' }, { fin: true });
    const connection = await waitFor('the exec to start', () => docker.connections.at(-1));
    // Four 4 KiB frames in one write of the client: one read of the shim's.
    const chunks = numbered(4, 4 * KiB);
    spdy.socket.write(Buffer.concat(chunks.map((c) => encodeData(stdin, 0, c))));
    await waitFor('the 16 KiB in Docker', () => connection.bytes === 16 * KiB, { timeoutMs: 5_000 });
    console.log(`SPDY: 4 frames of one read took ${connection.calls.length} write call(s) to Docker: ${connection.calls.join(', ')} chunk(s)`);
    assert.deepEqual(connection.calls, [4], 'one write call with the four frames');
    assert.deepEqual(Buffer.concat(connection.received), Buffer.concat(chunks));
    connection.push(null);
    spdy.socket.destroy();
  });

  for (const transport of ['SPDY', 'WebSocket'] as const) {
    it(`${transport}: while Docker's connection is busy, up to PIPE_BUFFER_BYTES wait for it, and no more; fewer write calls than chunks`, async () => {
      docker.holdFirstWrite = true;
      // 1 MiB of 32 KiB chunks, as kubectl writes stdin: far past the bound.
      const chunks = numbered(32, 32 * KiB);
      let send: (chunk: Buffer) => void;
      let hangUp: () => void;
      if (transport === 'SPDY') {
        const spdy = await rawSpdyConnect(exec(), 'v4.channel.k8s.io');
        await spdy.open({ streamType: 'error' }, { fin: true });
        const stdin = await spdy.open({ streamType: 'stdin' });
        await spdy.open({ streamType: 'stdout' }, { fin: true });
        send = (chunk) => void spdy.write(stdin, chunk);
        hangUp = () => spdy.socket.destroy();
      } else {
        const ws = await wsConnect(exec(), ['v4.channel.k8s.io']);
        send = (chunk) => ws.send(0, chunk);
        hangUp = () => ws.ws.terminate();
      }
      const connection = await waitFor('the exec to start', () => docker.connections.at(-1));
      for (const chunk of chunks) send(chunk);
      await waitFor(`${PIPE_BUFFER_BYTES} bytes waiting behind the held write`, () => connection.writableLength >= PIPE_BUFFER_BYTES, {
        timeoutMs: 5_000,
        explain: () => `${connection.writableLength} bytes wait`,
      });
      const gathered = connection.writableLength;
      connection.release();
      await waitFor('all of stdin in Docker', () => connection.bytes === 32 * 32 * KiB, { timeoutMs: 10_000, explain: () => `${connection.bytes} bytes` });
      console.log(
        `${transport}: ${gathered} bytes gathered behind the held write (most ${connection.maxUnwritten}); ${connection.calls.length} write calls for 32 chunks: ${connection.calls.join(', ')}`,
      );
      assert.ok(connection.maxUnwritten <= PIPE_BUFFER_BYTES + 32 * KiB, `at most the bound and one chunk wait: ${connection.maxUnwritten}`);
      // pipe() made a call a chunk (32 at least); batches of a read each make far fewer.
      assert.ok(connection.calls.length < chunks.length, `${connection.calls.length} write calls for ${chunks.length} chunks`);
      assert.deepEqual(Buffer.concat(connection.received), Buffer.concat(chunks), 'every byte, in order');
      connection.push(null);
      hangUp();
    });
  }
});
