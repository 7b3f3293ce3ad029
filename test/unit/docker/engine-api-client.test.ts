// How the Docker client classifies the daemon's error answers (src/docker/engine-api-client.ts),
// and how it sends the short calls (on node:http, not docker-modem), against a stand-in daemon
// on a unix socket that gives canned answers.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EngineApiClient, IMAGE_LIST_ATTEMPTS } from '../../../src/docker/engine-api-client';
import { CancelledError, DockerConflictError, DockerNotFoundError, DockerServerError, DockerTimeoutError, UnavailableError } from '../../../src/errors';
import { countModemDials, type ModemDials } from '../../support/modem-dials';
import { waitFor } from '../../support/poll';
import { tempDir } from '../../support/temp';

const ID = `sha256:${'ab'.repeat(32)}`;

describe('Docker error answers', () => {
  const work = tempDir('docker-errors');
  const socket = path.join(work, 'docker.sock');
  /** The answer the stand-in gives next: status and daemon message. */
  let answer: [number, string] = [200, ''];
  const server = http.createServer((_req, res) => {
    res.writeHead(answer[0], { 'Content-Type': 'application/json' }).end(JSON.stringify({ message: answer[1] }));
  });
  const docker = new EngineApiClient({ kind: 'unix', path: socket, url: `unix://${socket}` }, 5_000);

  before(() => new Promise<void>((resolve) => server.listen(socket, resolve)));
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(work, { recursive: true, force: true });
  });

  async function removeFails(status: number, message: string): Promise<unknown> {
    answer = [status, message];
    return docker.removeImage(ID, { force: true, noprune: false }).then(
      () => assert.fail('the removal should have failed'),
      (err: unknown) => err,
    );
  }

  it('takes "gone" in Docker 20.10\'s 500 words and in 404s as not found', async () => {
    for (const [status, message] of [
      [500, `unrecognized image ID ${ID}`],
      [404, `unrecognized image ID ${ID}`],
      [404, `No such image: ${ID}`],
      [404, 'reference does not exist'],
    ] as const) {
      const err = await removeFails(status, message);
      assert.ok(err instanceof DockerNotFoundError, `${status} ${message}: ${String(err)}`);
      assert.equal(err.message, message);
    }
  });

  it('keeps other failures as they are', async () => {
    const server500 = await removeFails(500, 'driver failed to remove root filesystem');
    assert.ok(server500 instanceof DockerServerError && server500.httpStatus === 500, String(server500));
    assert.ok((await removeFails(409, 'conflict: unable to delete')) instanceof DockerConflictError);
  });
});

describe('an image list Docker answers 404 (an image removed while its containerd store listed)', () => {
  const work = tempDir('image-list-404');
  const socket = path.join(work, 'docker.sock');
  const GONE = `failed to read config content: NotFound: content digest ${ID}: not found`;
  /** How many of the next image lists the stand-in answers 404; the rest get one image. */
  let gone = 0;
  let lists = 0;
  const server = http.createServer((_req, res) => {
    lists++;
    const [status, doc] = gone-- > 0 ? [404, { message: GONE }] : [200, [{ Id: ID }]];
    res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(doc));
  });
  const docker = new EngineApiClient({ kind: 'unix', path: socket, url: `unix://${socket}` }, 5_000);

  before(() => new Promise<void>((resolve) => server.listen(socket, resolve)));
  after(async () => {
    docker.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('asks again, and answers the list that follows', async () => {
    gone = IMAGE_LIST_ATTEMPTS - 1;
    lists = 0;
    assert.deepEqual(await docker.listImages({ all: true }), [{ Id: ID }]);
    assert.equal(lists, IMAGE_LIST_ATTEMPTS);
  });

  it('gives up after IMAGE_LIST_ATTEMPTS lists as unavailable, never as not found', async () => {
    gone = IMAGE_LIST_ATTEMPTS + 5;
    lists = 0;
    await assert.rejects(docker.listImages({}), (err: unknown) => err instanceof UnavailableError && err.message.includes(GONE));
    assert.equal(lists, IMAGE_LIST_ATTEMPTS);
  });
});

describe('the short calls, on node:http without docker-modem', () => {
  const work = tempDir('short-calls');
  const socket = path.join(work, 'docker.sock');
  /** What the stand-in saw: method, URL and JSON body (if any) of each request. */
  const seen: string[] = [];
  let connections = 0;
  /** Requests the stand-in holds unanswered (the deadline's and the caller's tests). */
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const url = req.url ?? '';
      seen.push(`${req.method} ${url}${body === '' ? '' : ` ${body}`}`);
      const json = (status: number, doc: unknown): void => void res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(doc));
      if (url.startsWith('/containers/slow/')) return void held.push(res);
      if (url.startsWith('/containers/gone/')) return json(404, { message: 'No such container: gone' });
      if (url === '/containers/big/json') return json(500, { message: 'x'.repeat(8 * 1024 * 1024) });
      if (url === '/containers/garbled/json') return void res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"Id": "garb');
      if (url === '/_ping') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('OK');
      if (url.includes('/resize?')) return void res.writeHead(200).end();
      if (/\/(start|stop|kill)\b/.test(url) || (req.method === 'DELETE' && url.startsWith('/containers/'))) return void res.writeHead(204).end();
      if (url === '/containers/create?name=k8s_c') return json(201, { Id: 'c1', Warnings: [] });
      if (url === '/containers/c1/exec') return json(201, { Id: 'e1' });
      if (url.startsWith('/containers/json') || url.startsWith('/images/json')) return json(200, [{ Id: 'c1' }]);
      if (req.method === 'DELETE') return json(200, [{ Untagged: 'busybox:latest' }]);
      json(200, { Id: url });
    });
  });
  server.on('connection', () => connections++);
  const endpoint = { kind: 'unix', path: socket, url: `unix://${socket}` } as const;
  // A deadline no busy machine reaches for the answers; the deadline's own test has its own client.
  const docker = new EngineApiClient(endpoint, 30_000);
  let dials: ModemDials;

  before(async () => {
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    dials = countModemDials();
  });
  after(async () => {
    dials.stop();
    docker.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('sends every short call as docker-modem did, none through its dial, and reads the answers', async () => {
    seen.length = 0;
    dials.reset();
    const answers: unknown[] = [
      await docker.ping(),
      await docker.version(),
      await docker.info(),
      await docker.inspectContainer('c1'),
      await docker.listContainers({ all: true, filters: { label: ['a=b'] } }),
      await docker.createContainer({ name: 'k8s_c', Image: 'busybox', Labels: { a: 'b' } }),
      await docker.startContainer('c1'),
      await docker.stopContainer('c1', 10),
      await docker.killContainer('c1', 'SIGKILL'),
      await docker.updateContainer('c1', { CpuShares: 2 }),
      await docker.removeContainer('c1', { force: true, removeVolumes: false }),
      await docker.createExec('c1', { Cmd: ['ls'], AttachStdout: true }),
      await docker.inspectExec('e1'),
      await docker.resizeExec('e1', { width: 80, height: 24 }),
      await docker.resizeContainer('c1', { width: 80, height: 24 }),
      await docker.listImages({}),
      await docker.inspectImage('busybox:latest'),
      await docker.removeImage('busybox:latest', { force: false, noprune: false }),
      await docker.systemDataUsage(),
    ];
    assert.equal(dials.count, 0, 'docker-modem dialled none of them');
    assert.deepEqual(seen, [
      'GET /_ping',
      'GET /version',
      'GET /info',
      'GET /containers/c1/json',
      'GET /containers/json?all=true&size=false&filters=%7B%22label%22%3A%5B%22a%3Db%22%5D%7D',
      'POST /containers/create?name=k8s_c {"Image":"busybox","Labels":{"a":"b"}}',
      'POST /containers/c1/start',
      'POST /containers/c1/stop?t=10',
      'POST /containers/c1/kill?signal=SIGKILL',
      'POST /containers/c1/update {"CpuShares":2}',
      'DELETE /containers/c1?force=true&v=false',
      'POST /containers/c1/exec {"Cmd":["ls"],"AttachStdout":true}',
      'GET /exec/e1/json',
      'POST /exec/e1/resize?h=24&w=80',
      'POST /containers/c1/resize?h=24&w=80',
      'GET /images/json?all=false&digests=true&filters=%7B%7D',
      'GET /images/busybox%3Alatest/json',
      'DELETE /images/busybox%3Alatest?force=false&noprune=false',
      'GET /system/df',
    ]);
    assert.deepEqual(answers, [
      undefined,
      { Id: '/version' },
      { Id: '/info' },
      { Id: '/containers/c1/json' },
      [{ Id: 'c1' }],
      'c1',
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      'e1',
      { Id: '/exec/e1/json' },
      undefined,
      undefined,
      [{ Id: 'c1' }],
      { Id: '/images/busybox%3Alatest/json' },
      [{ Untagged: 'busybox:latest' }],
      { Id: '/system/df' },
    ]);
  });

  it('answers 404s as not found on one kept connection, the daemon’s words as the message', async () => {
    const before = connections;
    for (let i = 0; i < 20; i++) {
      await assert.rejects(docker.inspectContainer('gone'), (err: unknown) => err instanceof DockerNotFoundError && err.message === 'No such container: gone');
    }
    assert.ok(connections - before <= 1, `${connections - before} connections for 20 answers of 404`);
  });

  it('keeps of an 8 MiB error answer its first 64 KiB, and of a garbled success a short message', async () => {
    const big = await docker.inspectContainer('big').then(
      () => assert.fail('a 500 is an error'),
      (err: unknown) => err,
    );
    assert.ok(big instanceof DockerServerError && big.httpStatus === 500, String(big));
    assert.ok(big.message.length <= 64 * 1024 + 200, `a message of ${big.message.length} characters`);
    await assert.rejects(docker.inspectContainer('garbled'), (err: unknown) => err instanceof DockerServerError && /not JSON/.test(err.message) && err.message.length < 300);
  });

  it('gives up at the request deadline, or as soon as the caller does, naming why', async () => {
    held.length = 0;
    const quick = new EngineApiClient(endpoint, 300);
    try {
      await assert.rejects(quick.inspectContainer('slow'), (err: unknown) => err instanceof DockerTimeoutError && /within 0\.3s \(--runtime-request-timeout\)/.test(err.message));
      const caller = new AbortController();
      const asked = quick.inspectContainer('slow', { signal: caller.signal });
      await waitFor('the stand-in to hold the request', () => held.length === 2);
      const reason = new CancelledError('the RPC was cancelled');
      caller.abort(reason);
      await assert.rejects(asked, (err: unknown) => err === reason);
      assert.deepEqual(quick.sockets.usage().calls, { inUse: 0, waiting: 0 }, 'neither holds a connection');
    } finally {
      quick.close();
    }
  });
});
