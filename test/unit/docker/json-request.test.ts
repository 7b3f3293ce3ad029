// Docker's short calls on node:http (src/docker/json-request.ts): the query as docker-modem
// wrote it, the body sent, the answer read (a document, nothing, or the error docker-modem
// gave, which the client classifies), and the request's deadline (src/util/request-deadline.ts).
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { MAX_ERROR_BODY_BYTES } from '../../../src/docker/hijack';
import { answerBytesKept, JsonAnswerError, pathWithQuery, readAnswer, requestBody, requestTarget } from '../../../src/docker/json-request';
import { RequestDeadline } from '../../../src/util/request-deadline';
import { waitFor } from '../../support/poll';

const INSPECT = { statusCodes: { 200: true, 404: 'no such container', 500: 'server error' }, answer: 'json' } as const;
const START = { statusCodes: { 204: true, 304: 'container already started', 404: 'no such container' }, answer: 'none' } as const;

describe('a short call’s request', () => {
  it('writes the query as docker-modem did: objects as JSON, undefined left out, none without a query', () => {
    assert.equal(pathWithQuery('/containers/json', undefined), '/containers/json');
    assert.equal(pathWithQuery('/containers/create', {}), '/containers/create?');
    assert.equal(
      pathWithQuery('/containers/json', { all: true, size: false, filters: '{"label":["a=b"]}', skipped: undefined }),
      '/containers/json?all=true&size=false&filters=%7B%22label%22%3A%5B%22a%3Db%22%5D%7D',
    );
    assert.equal(pathWithQuery('/images/create', { changes: ['CMD ["/pause"]'] }), '/images/create?changes=%5B%22CMD+%5B%5C%22%2Fpause%5C%22%5D%22%5D');
    assert.equal(pathWithQuery('/containers/create', { name: 'k8s_a b&c' }), '/containers/create?name=k8s_a+b%26c');
  });

  it('sends a body as JSON with its length in bytes, and none as an empty body', () => {
    const sent = requestBody({ Image: 'ünïcode', Cmd: ['sh'] });
    assert.equal(sent.data, '{"Image":"ünïcode","Cmd":["sh"]}');
    assert.deepEqual(sent.headers, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(sent.data!) });
    assert.deepEqual(requestBody(undefined), { data: undefined, headers: { 'Content-Length': 0 } });
  });

  it('connects to a unix socket by its path and to tcp by host and port', () => {
    assert.deepEqual(requestTarget({ kind: 'unix', path: '/run/docker.sock', url: 'unix:///run/docker.sock' }), { socketPath: '/run/docker.sock' });
    assert.deepEqual(requestTarget({ kind: 'tcp', host: '::1', port: 2375, url: 'tcp://[::1]:2375' }), { host: '::1', port: 2375 });
  });
});

describe('a short call’s answer', () => {
  it('is the document for a success asked as JSON, nothing for one asked as none', () => {
    assert.deepEqual(readAnswer(200, Buffer.from('{"Id":"c1","State":{"Running":true}}'), INSPECT), { Id: 'c1', State: { Running: true } });
    assert.equal(readAnswer(204, Buffer.alloc(0), START), undefined);
    assert.equal(readAnswer(200, Buffer.from('OK'), { statusCodes: { 200: true }, answer: 'none' }), undefined);
  });

  it('fails a success that is not JSON with a short message, however long the body', () => {
    for (const body of ['', 'OK', `{"Id":"${'x'.repeat(100_000)}`]) {
      assert.throws(
        () => readAnswer(200, Buffer.from(body), INSPECT),
        (err: unknown) => err instanceof JsonAnswerError && err.message.length < 200 && err.message.includes(`${Buffer.byteLength(body)} bytes`),
        JSON.stringify(body.slice(0, 20)),
      );
    }
  });

  it('fails an error answer as docker-modem did: status, its words, the daemon’s JSON message', () => {
    const err = (() => {
      try {
        readAnswer(404, Buffer.from('{"message":"No such container: c1"}'), INSPECT);
      } catch (e) {
        return e as Error & { statusCode: number; reason: string; json: unknown };
      }
      return assert.fail('a 404 is an error');
    })();
    assert.equal(err.statusCode, 404);
    assert.equal(err.reason, 'no such container');
    assert.deepEqual(err.json, { message: 'No such container: c1' });
    assert.equal(err.message, '(HTTP code 404) no such container - No such container: c1');
    // A status the call does not name, and a body that is not JSON: the text is the message.
    assert.throws(() => readAnswer(502, Buffer.from('bad gateway'), START), { statusCode: 502, reason: 'unexpected', json: null, message: '(HTTP code 502) unexpected - bad gateway' });
    // A status a call names only as words (304 for start) is no success.
    assert.throws(() => readAnswer(304, Buffer.alloc(0), START), { statusCode: 304, reason: 'container already started' });
  });

  it(`keeps all of a JSON success, none of an unread one, and an error’s first ${MAX_ERROR_BODY_BYTES} bytes`, () => {
    assert.equal(answerBytesKept(200, INSPECT), Infinity);
    assert.equal(answerBytesKept(204, START), 0);
    assert.equal(answerBytesKept(404, INSPECT), MAX_ERROR_BODY_BYTES);
    assert.equal(answerBytesKept(418, START), MAX_ERROR_BODY_BYTES);
    const long = readAnswer.bind(undefined, 500, Buffer.from(JSON.stringify({ message: 'x'.repeat(MAX_ERROR_BODY_BYTES * 2) })), INSPECT);
    assert.throws(long, (err: unknown) => (err as Error).message.length <= MAX_ERROR_BODY_BYTES + 100);
  });
});

describe('a request’s deadline', () => {
  it('is the caller’s own signal for a request without one (a stream), and none without a caller', () => {
    const caller = new AbortController();
    assert.equal(new RequestDeadline(undefined, caller.signal).signal, caller.signal);
    assert.equal(new RequestDeadline(undefined, undefined).signal, undefined);
  });

  it('aborts when the deadline passes, and says so', async () => {
    const deadline = new RequestDeadline(20, undefined);
    assert.equal(deadline.signal!.aborted, false);
    await waitFor('the deadline to pass', () => deadline.signal!.aborted);
    assert.equal(deadline.timedOut, true);
    assert.equal((deadline.signal!.reason as Error).name, 'TimeoutError');
  });

  it('aborts with the caller’s reason when the caller gives up first, and not timed out', () => {
    const caller = new AbortController();
    const deadline = new RequestDeadline(60_000, caller.signal);
    const reason = new Error('the RPC was cancelled');
    caller.abort(reason);
    assert.equal(deadline.signal!.reason, reason);
    assert.equal(deadline.timedOut, false);
    const already = new RequestDeadline(60_000, caller.signal);
    assert.equal(already.signal!.aborted, true, 'a caller gone already');
  });

  it('gives a caller’s signal one listener however many requests it has running, and none of theirs once ended', async () => {
    const caller = new AbortController();
    let listeners = 0;
    const add = caller.signal.addEventListener.bind(caller.signal);
    caller.signal.addEventListener = ((...args: Parameters<AbortSignal['addEventListener']>) => (listeners++, add(...args))) as AbortSignal['addEventListener'];
    const running = Array.from({ length: 100 }, () => new RequestDeadline(60_000, caller.signal));
    const deadlines = Array.from({ length: 100 }, () => new RequestDeadline(10, caller.signal));
    assert.equal(listeners, 1, 'one listener for 200 requests (EventTarget warns past 10)');
    for (const d of deadlines) d.end();
    // One made after them with the same delay and not ended: once it fired, theirs would have.
    const witness = new RequestDeadline(10, undefined);
    await waitFor('the witness’s deadline to pass', () => witness.timedOut);
    caller.abort();
    assert.ok(deadlines.every((d) => !d.signal!.aborted && !d.timedOut), 'the ended ones: neither timed out nor cancelled');
    assert.ok(running.every((d) => d.signal!.aborted && !d.timedOut), 'the running ones: cancelled');
    for (const d of running) d.end();
  });
});
