// The streaming server as Go clients (kubelet, kubectl: spdystream) meet it: streams opened
// without HTTP pseudo-headers and no flow-control window ever granted, so output larger than
// SPDY's initial 64 KiB window must still flow. And token expiry, on a server run in-process
// with a short token lifetime.
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { parseEndpoint } from '../../src/config/endpoint';
import { EngineApiClient } from '../../src/docker/engine-api-client';
import { StreamingServer } from '../../src/streaming/streaming-server';
import * as zlib from 'node:zlib';
import { ControlType, decodeFrames, encodeControl, FLAG_FIN, GOAWAY_PROTOCOL_ERROR, HeaderCodec } from '../../src/streaming/spdy/framing';
import spdyDictionaries from 'spdy-transport/lib/spdy-transport/protocol/spdy/dictionary';
import { createLogger } from '../../src/util/logger';
import { waitFor } from '../support/poll';
import { useShim } from '../support/fixture';
import { SLEEP_FOREVER } from '../support/pods';
import { rawUpgrade } from '../support/streaming-clients';
import { parseStatus, spdyConnect } from '../support/streaming-clients';

/** SYN_STREAM as spdystream sends it: only the caller's headers, no :method or :path. */
async function synStream(codec: HeaderCodec, streamId: number, headers: Record<string, string>, fin: boolean): Promise<Buffer> {
  const head = Buffer.alloc(10);
  head.writeUInt32BE(streamId, 0);
  const block = await codec.deflate(Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])));
  return encodeControl(ControlType.SynStream, fin ? FLAG_FIN : 0, Buffer.concat([head, block]));
}

/** Reads data frames per stream until every stream in `ids` has ended; never grants window. */
function readStreams(socket: Socket, ids: number[]): Promise<Map<number, Buffer>> {
  return new Promise((resolve, reject) => {
    const data = new Map<number, Buffer[]>(ids.map((id) => [id, []]));
    const open = new Set(ids);
    let buffered: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      const { frames, rest } = decodeFrames(Buffer.concat([buffered, chunk]));
      buffered = rest;
      for (const f of frames) {
        if (f.kind !== 'data' || !data.has(f.streamId)) continue;
        data.get(f.streamId)!.push(f.data);
        if ((f.flags & FLAG_FIN) !== 0) open.delete(f.streamId);
      }
      if (open.size === 0) resolve(new Map([...data].map(([id, parts]) => [id, Buffer.concat(parts)])));
    });
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`connection closed with streams ${[...open].join(', ')} open`)));
  });
}

describe('streaming server with a spdystream-style client', () => {
  const f = useShim({ pod: 'rawspdy' });
  let sleeper: string;

  before(async () => (sleeper = await f.runContainer('sleeper', SLEEP_FOREVER)));

  it('answers a header-block bomb (40,000 declared entries, or a block inflating to megabytes) with GOAWAY PROTOCOL_ERROR at once, and keeps answering CRI calls', async () => {
    const bombs: Array<[string, Buffer]> = [];
    const entries = Buffer.alloc(4 + 40_000 * 8);
    entries.writeUInt32BE(40_000, 0);
    bombs.push(['40,000 empty entries', entries]);
    const big = Buffer.alloc(4 + 8 + 4 * 1024 * 1024);
    big.writeUInt32BE(1, 0);
    big.writeUInt32BE(1, 4);
    big.write('a', 8);
    big.writeUInt32BE(4 * 1024 * 1024, 9);
    bombs.push(['a 4 MiB value', big]);
    for (const [what, block] of bombs) {
      const { url } = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['true'], stdout: true });
      const socket = await rawUpgrade(url, 'v4.channel.k8s.io');
      const goAway = new Promise<number>((resolve, reject) => {
        let buffered: Buffer = Buffer.alloc(0);
        socket.on('data', (chunk: Buffer) => {
          const { frames, rest } = decodeFrames(Buffer.concat([buffered, chunk]));
          buffered = rest;
          for (const fr of frames) if (fr.kind === 'control' && fr.type === ControlType.GoAway) resolve(fr.payload.readUInt32BE(4));
        });
        socket.once('close', () => reject(new Error(`${what}: closed without GOAWAY`)));
      });
      // The client's own compressor, so the block is a valid deflate stream of the bomb.
      const compressed = zlib.deflateSync(block, { dictionary: spdyDictionaries[3] });
      const head = Buffer.alloc(10);
      head.writeUInt32BE(1, 0);
      const started = Date.now();
      socket.write(encodeControl(ControlType.SynStream, 0, Buffer.concat([head, compressed])));
      const version = f.client.runtime.Version({});
      assert.equal(await goAway, GOAWAY_PROTOCOL_ERROR, what);
      assert.equal((await version).runtimeName, 'docker');
      const tookMs = Date.now() - started;
      console.log(`header-block bomb (${what}, ${compressed.length} bytes compressed): GOAWAY and Version in ${tookMs} ms`);
      socket.destroy();
    }
  });

  it('delivers 300 kB of output without any window update from the client', async () => {
    const size = 300_000;
    const { url } = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['head', '-c', String(size), '/dev/zero'], stdout: true });
    const socket = await rawUpgrade(url, 'v4.channel.k8s.io');
    const codec = new HeaderCodec();
    try {
      const streams = readStreams(socket, [1, 3]);
      socket.write(await synStream(codec, 1, { streamType: 'error' }, true));
      socket.write(await synStream(codec, 3, { streamType: 'stdout' }, true));
      const got = await streams;
      assert.equal(got.get(3)!.length, size);
      assert.equal(parseStatus(got.get(1)!).status, 'Success');
    } finally {
      codec.close();
      socket.destroy();
    }
  });
});

describe('streaming tokens expire', () => {
  const docker = new EngineApiClient(parseEndpoint('unix:///var/run/docker.sock'), 10_000);
  const server = new StreamingServer({ bindAddress: '127.0.0.1:0', docker, log: createLogger('fatal', 'json'), tokenTtlMs: 200 });
  before(() => server.listen());
  after(() => server.close());

  it('answers 404 once a token has outlived its lifetime, and runs nothing', async () => {
    assert.match(server.baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    const url = server.urlFor({ kind: 'exec', containerId: 'ffffffffffff', sandboxId: 'eeeeeeeeeeee', cmd: ['true'], stdin: false, stdout: true, stderr: false, tty: false });
    await waitFor('the token to expire', () => server.pendingTokens === 0, { timeoutMs: 10_000 });
    await assert.rejects(spdyConnect(url, ['v4.channel.k8s.io']), { status: 404 });
  });
});
