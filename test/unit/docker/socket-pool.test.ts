// The Docker client's connection pool (src/docker/socket-pool.ts): its caps as derived from the
// descriptor limit, and the client's connections as a stand-in daemon on a unix socket sees them:
// calls at most the calls cap at once and kept alive, sessions apart from calls, a kept
// connection the server reset not a failed read.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type * as net from 'node:net';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { after, before, beforeEach, describe, it } from 'node:test';
import { EngineApiClient } from '../../../src/docker/engine-api-client';
import { DockerSocketPool, dockerSocketCaps, IDLE_SOCKET_MS, KEPT_IDLE_SOCKETS, MAX_STREAM_SOCKETS } from '../../../src/docker/socket-pool';
import { DEFAULT_STREAMING_LIMITS } from '../../../src/streaming/limits';
import { DockerUnreachableError } from '../../../src/errors';
import { waitFor } from '../../support/poll';
import { tempDir } from '../../support/temp';

/** kubelet's --max-pods default. */
const KUBELET_DEFAULT_MAX_PODS = 110;

describe('dockerSocketCaps', () => {
  it('gives calls a sixteenth, sessions an eighth and streams a sixteenth of the descriptor limit, within their ceilings', () => {
    assert.deepEqual(dockerSocketCaps(20_000), { calls: 256, sessions: 1024, streams: 1250 });
    assert.deepEqual(dockerSocketCaps(1_048_576), { calls: 256, sessions: 1024, streams: 4096 });
    assert.deepEqual(dockerSocketCaps(Infinity), { calls: 256, sessions: 1024, streams: 4096 });
    assert.deepEqual(dockerSocketCaps(65_536), { calls: 256, sessions: 1024, streams: 4096 });
    assert.deepEqual(dockerSocketCaps(4_096), { calls: 256, sessions: 512, streams: 256 });
    assert.deepEqual(dockerSocketCaps(1_024), { calls: 64, sessions: 128, streams: 64 });
    assert.deepEqual(dockerSocketCaps(64), { calls: 8, sessions: 8, streams: 8 });
    assert.deepEqual(dockerSocketCaps(0), { calls: 8, sessions: 8, streams: 8 });
  });

  it('holds a full node’s user sessions under the unit’s limit, and takes at most 5/16 of any limit with a held stream’s client socket counted', () => {
    const { sessionsPerPod } = DEFAULT_STREAMING_LIMITS;
    assert.ok(dockerSocketCaps(1_048_576).streams >= KUBELET_DEFAULT_MAX_PODS * sessionsPerPod);
    assert.equal(DEFAULT_STREAMING_LIMITS.sessions, MAX_STREAM_SOCKETS, 'the streaming server’s default node-wide cap is the budget at its ceiling');
    for (const limit of [1_024, 4_096, 20_000, 65_536, 1_048_576]) {
      const caps = dockerSocketCaps(limit);
      assert.ok(caps.calls + caps.sessions + 2 * caps.streams <= (5 * limit) / 16, `at ${limit}: ${JSON.stringify(caps)}`);
    }
  });

  it('builds kept-alive agents with those caps', () => {
    const pool = new DockerSocketPool(dockerSocketCaps(1_024));
    try {
      const calls = pool.callAgent as http.Agent & { keepAlive: boolean; options: { timeout?: number } };
      assert.deepEqual(
        [calls.keepAlive, calls.maxSockets, calls.maxTotalSockets, calls.maxFreeSockets, calls.options.timeout],
        [true, 64, 64, KEPT_IDLE_SOCKETS, IDLE_SOCKET_MS],
      );
      const sessions = pool.sessionAgent as http.Agent & { keepAlive: boolean };
      assert.deepEqual([sessions.keepAlive, sessions.maxSockets, sessions.maxTotalSockets], [false, 128, 128]);
    } finally {
      pool.close();
    }
  });
});

describe('the Docker client on its pool', () => {
  const work = tempDir('socket-pool');
  const socket = path.join(work, 'docker.sock');
  let open = 0;
  let mostOpen = 0;
  let opened = 0;
  /** Requests served on each connection so far. */
  const served = new Map<net.Socket, number>();
  /** Set: the next request that arrives as the second on its connection has that connection reset. */
  let resetSecondRequest = false;
  const methods: string[] = [];
  const server = http.createServer((req, res) => {
    methods.push(`${req.method} ${req.url}`);
    const n = (served.get(req.socket) ?? 0) + 1;
    served.set(req.socket, n);
    if (n === 2 && resetSecondRequest) {
      resetSecondRequest = false;
      req.socket.destroy();
      return;
    }
    if (req.url?.includes('/logs')) {
      // A followed log: the answer's head, then nothing until the client goes.
      res.writeHead(200, { 'Content-Type': 'application/vnd.docker.raw-stream' }).flushHeaders();
      return;
    }
    // A moment's work, so that calls overlap.
    setTimeout(() => {
      if (req.method === 'POST') res.writeHead(204).end();
      else res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ Id: 'c1' }));
    }, 5);
  });
  server.on('connection', (s: net.Socket) => {
    opened++;
    mostOpen = Math.max(mostOpen, ++open);
    s.on('close', () => open--);
  });
  const endpoint = { kind: 'unix' as const, path: socket, url: `unix://${socket}` };

  before(() => new Promise<void>((resolve) => server.listen(socket, resolve)));
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(work, { recursive: true, force: true });
  });
  beforeEach(async () => {
    server.closeAllConnections();
    await waitFor('the last test’s connections to close', () => open === 0);
    [mostOpen, opened] = [0, 0];
    methods.length = 0;
  });

  it('makes 200 calls at once on at most the calls cap of connections, kept alive', async () => {
    const docker = new EngineApiClient(endpoint, 5_000, new DockerSocketPool({ calls: 4, sessions: 2, streams: 2 }));
    try {
      const answers = await Promise.all(Array.from({ length: 200 }, () => docker.inspectContainer('c1')));
      assert.equal(answers.length, 200);
      assert.ok(answers.every((a) => a.Id === 'c1'));
      assert.equal(mostOpen, 4, 'connections open at once');
      assert.equal(opened, 4, 'connections opened in all (each kept and reused)');
      assert.deepEqual(docker.sockets.usage(), { calls: { inUse: 0, waiting: 0 }, sessions: { inUse: 0, waiting: 0 }, streams: { inUse: 0, waiting: 0 } });
    } finally {
      docker.close();
    }
  });

  it('lets the liveness ping ahead of a queue of calls: a burst is not Docker being silent', async () => {
    const docker = new EngineApiClient(endpoint, 5_000, new DockerSocketPool({ calls: 2, sessions: 2, streams: 2 }));
    try {
      let answered = 0;
      const burst = Promise.all(Array.from({ length: 100 }, () => docker.inspectContainer('c1').then(() => answered++)));
      await waitFor('the burst to queue', () => docker.sockets.usage().calls.waiting > 90);
      await docker.ping();
      assert.ok(answered <= 4, `${answered} of the 100 calls answered before the ping`);
      await burst;
    } finally {
      docker.close();
    }
  });

  it('keeps sessions apart: sessions past their cap wait for one to close, and calls go on meanwhile', async () => {
    const docker = new EngineApiClient(endpoint, 5_000, new DockerSocketPool({ calls: 2, sessions: 2, streams: 2 }));
    const streams: Readable[] = [];
    try {
      const follow = (): Promise<Readable> => docker.containerLogs('c1', { follow: true, stdout: true, stderr: true });
      streams.push(await follow(), await follow());
      const third = follow();
      await waitFor('the third session to wait', () => docker.sockets.usage().sessions.waiting === 1);
      // The sessions hold both of theirs; calls have their own.
      const answers = await Promise.all(Array.from({ length: 20 }, () => docker.inspectContainer('c1')));
      assert.equal(answers.length, 20);
      assert.equal(docker.sockets.usage().sessions.waiting, 1, 'the third still waits');
      assert.ok(open <= 4, `${open} connections open: two sessions and two calls at most`);
      streams[0]!.destroy();
      streams.push(await third);
      assert.deepEqual(docker.sockets.usage().sessions, { inUse: 2, waiting: 0 });
    } finally {
      for (const s of streams) s.destroy();
      docker.close();
    }
    await waitFor('the sessions’ connections to close', () => open === 0);
  });

  it('asks a read again when its kept connection is reset as it goes out; a POST it does not', async () => {
    const docker = new EngineApiClient(endpoint, 5_000, new DockerSocketPool({ calls: 4, sessions: 2, streams: 2 }));
    try {
      await docker.inspectContainer('c1');
      resetSecondRequest = true;
      // On the kept connection, which the server resets: asked again on a new one.
      assert.equal((await docker.inspectContainer('c1')).Id, 'c1');
      assert.deepEqual(methods, ['GET /containers/c1/json', 'GET /containers/c1/json', 'GET /containers/c1/json']);

      methods.length = 0;
      await waitFor('the reset connection to be gone', () => open === 1);
      resetSecondRequest = true;
      await assert.rejects(docker.startContainer('c1'), DockerUnreachableError);
      assert.deepEqual(methods, ['POST /containers/c1/start'], 'the POST went once');
    } finally {
      docker.close();
    }
  });
});
