// Pure pieces of the streaming server: tokens, request checks, protocol negotiation, the
// status document, resize messages, WebSocket channel framing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ExecRequest__Output } from '../../../src/cri/types';
import { InvalidArgumentError, ResourceExhaustedError } from '../../../src/errors';
import {
  encodeOutcome,
  JsonMessageSplitter,
  negotiate,
  parseResize,
  REMOTECOMMAND_SPDY_PROTOCOLS,
  REMOTECOMMAND_WS_PROTOCOLS,
  statusDocument,
} from '../../../src/streaming/protocol';
import { checkAttachRequest, checkExecRequest, checkPortForwardRequest } from '../../../src/streaming/requests';
import { legacyRequestId } from '../../../src/streaming/port-forward-streams';
import { expectedStreamTypes } from '../../../src/streaming/spdy-channels';
import { redactToken, TokenCache } from '../../../src/streaming/tokens';
import { channelOf, encodeChannelMessage, payloadOf } from '../../../src/streaming/ws-channels';

describe('streaming tokens', () => {
  it('are 192-bit URL-safe strings, each different', () => {
    const cache = new TokenCache<string>();
    const a = cache.issue('a');
    const b = cache.issue('b');
    assert.match(a, /^[A-Za-z0-9_-]{32}$/);
    assert.notEqual(a, b);
    assert.equal(redactToken(a), `${a.slice(0, 4)}…`);
  });

  it('are good once', () => {
    const cache = new TokenCache<string>();
    const t = cache.issue('req');
    assert.equal(cache.consume(t), 'req');
    assert.equal(cache.consume(t), undefined);
    assert.equal(cache.consume('x'.repeat(32)), undefined);
    assert.equal(cache.consume('../../etc/passwd'), undefined);
  });

  it('expire after their lifetime, and a lookup of an expired token uses it up', () => {
    let now = 1_000;
    const cache = new TokenCache<string>(60_000, 10, () => now);
    const t = cache.issue('req');
    const late = cache.issue('late');
    now += 59_999;
    assert.equal(cache.consume(t), 'req');
    now += 1;
    assert.equal(cache.consume(late), undefined);
    assert.equal(cache.size, 0);
  });

  it('keep at most the configured number, refusing a new one while full (as kubelet does) and keeping those issued', () => {
    let now = 1_000;
    const cache = new TokenCache<number>(60_000, 2, () => now);
    const first = cache.issue(1);
    const second = cache.issue(2);
    assert.throws(() => cache.issue(3), (err: Error) => err instanceof ResourceExhaustedError && /at most 2/.test(err.message));
    assert.equal(cache.size, 2);
    assert.equal(cache.consume(first), 1);
    const third = cache.issue(3);
    now += 60_000;
    const fourth = cache.issue(4);
    assert.equal(cache.consume(second), undefined, 'expired tokens make room');
    assert.equal(cache.consume(third), undefined);
    assert.equal(cache.consume(fourth), 4);
  });
});

const exec = (over: Partial<ExecRequest__Output>): ExecRequest__Output => ({
  containerId: 'abc123',
  cmd: ['sh'],
  tty: false,
  stdin: false,
  stdout: true,
  stderr: false,
  ...over,
});

describe('streaming request checks', () => {
  it('accept a well-formed exec and keep its options', () => {
    assert.deepEqual(checkExecRequest(exec({ stdin: true, tty: true })), {
      containerId: 'abc123',
      cmd: ['sh'],
      stdin: true,
      stdout: true,
      stderr: false,
      tty: true,
    });
  });

  it('name the field at fault', () => {
    const bad: Array<[ExecRequest__Output, RegExp]> = [
      [exec({ containerId: '' }), /container_id is required/],
      [exec({ containerId: 'ABC/../x' }), /container_id/],
      [exec({ cmd: [] }), /cmd is required/],
      [exec({ stdout: false }), /one of stdin, stdout and stderr/],
      [exec({ tty: true, stderr: true }), /tty and stderr cannot both be true/],
    ];
    for (const [req, message] of bad) assert.throws(() => checkExecRequest(req), (e: unknown) => e instanceof InvalidArgumentError && message.test(e.message));
    assert.throws(() => checkAttachRequest({ containerId: 'abc', stdin: false, stdout: false, stderr: false, tty: false }), /one of stdin/);
    for (const port of [0, -1, 65536, 1.5]) {
      assert.throws(() => checkPortForwardRequest({ podSandboxId: 'abc', port: [80, port] }), new RegExp(`port: ${port} is not a port`));
    }
    assert.deepEqual(checkPortForwardRequest({ podSandboxId: 'abc', port: [1, 65535] }), { sandboxId: 'abc', ports: [1, 65535] });
  });
});

describe('streaming protocol negotiation', () => {
  it('picks our most preferred protocol among those offered, from repeated or comma-joined headers', () => {
    assert.equal(negotiate(['channel.k8s.io, v4.channel.k8s.io', 'v3.channel.k8s.io'], REMOTECOMMAND_SPDY_PROTOCOLS), 'v4.channel.k8s.io');
    assert.equal(negotiate(['v2.channel.k8s.io'], REMOTECOMMAND_SPDY_PROTOCOLS), 'v2.channel.k8s.io');
    assert.equal(negotiate(['v9.channel.k8s.io'], REMOTECOMMAND_SPDY_PROTOCOLS), undefined);
    assert.equal(negotiate([], REMOTECOMMAND_SPDY_PROTOCOLS), undefined);
    assert.equal(negotiate(['v4.base64.channel.k8s.io', 'v5.channel.k8s.io'], REMOTECOMMAND_WS_PROTOCOLS), 'v5.channel.k8s.io');
  });

  it('pairs port-forward streams of clients without requestID as error N, data N+2', () => {
    assert.equal(legacyRequestId(5, 'error'), '5');
    assert.equal(legacyRequestId(7, 'data'), '5');
  });

  it('lists the streams a client opens: resize only with a TTY, no stderr with a TTY', () => {
    const opts = { stdin: true, stdout: true, stderr: true, tty: false };
    assert.deepEqual(expectedStreamTypes(opts, 'v4.channel.k8s.io'), ['error', 'stdin', 'stdout', 'stderr']);
    assert.deepEqual(expectedStreamTypes({ ...opts, tty: true }, 'v4.channel.k8s.io'), ['error', 'stdin', 'stdout', 'resize']);
    assert.deepEqual(expectedStreamTypes({ ...opts, tty: true }, 'v2.channel.k8s.io'), ['error', 'stdin', 'stdout']);
  });
});

describe('streaming status and messages', () => {
  it('reports a non-zero exit code as metav1.Status with an ExitCode cause (v4), as text before', () => {
    assert.deepEqual(JSON.parse(encodeOutcome({ kind: 'exit', code: 137 }, 'v4.channel.k8s.io').toString()), {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'command terminated with non-zero exit code: 137',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '137' }] },
    });
    assert.equal(statusDocument({ kind: 'success' }).status, 'Success');
    assert.equal(encodeOutcome({ kind: 'success' }, 'v2.channel.k8s.io').length, 0);
    assert.equal(encodeOutcome({ kind: 'exit', code: 2 }, 'channel.k8s.io').toString(), 'command terminated with non-zero exit code: 2');
    assert.equal(encodeOutcome({ kind: 'error', message: 'boom' }, 'v4.channel.k8s.io').toString().includes('"message":"boom"'), true);
  });

  it('parses resize messages and refuses what is not a terminal size', () => {
    assert.deepEqual(parseResize('{"Width":80,"Height":24}'), { width: 80, height: 24 });
    for (const bad of ['', 'x', '[]', '{"Width":-1,"Height":2}', '{"Width":0,"Height":2}', '{"Width":3,"Height":0}', '{"Width":70000,"Height":2}', '{"Width":"80","Height":24}']) {
      assert.equal(parseResize(bad), undefined, bad);
    }
  });

  it('splits concatenated JSON messages, across chunk boundaries', () => {
    const s = new JsonMessageSplitter();
    const push = (text: string) => s.push(Buffer.from(text)).map((m) => m.toString());
    assert.deepEqual(push('{"Width":1,"Height":2}\n{"Wid'), ['{"Width":1,"Height":2}']);
    assert.deepEqual(push('th":3,"Height":4}{"a":"}"}'), ['{"Width":3,"Height":4}', '{"a":"}"}']);
  });

  it('frames WebSocket channel messages, binary and base64', () => {
    assert.deepEqual(encodeChannelMessage(1, Buffer.from('hi'), false), Buffer.from([1, 0x68, 0x69]));
    assert.equal(encodeChannelMessage(2, Buffer.from('hi'), true), '2aGk=');
    assert.equal(channelOf(Buffer.from([0, 0x61]), false), 0);
    assert.deepEqual(payloadOf(Buffer.from([0, 0x61]), false), Buffer.from('a'));
    assert.equal(channelOf(Buffer.from('4aGk='), true), 4);
    assert.deepEqual(payloadOf(Buffer.from('0aGk='), true), Buffer.from('hi'));
    assert.equal(channelOf(Buffer.alloc(0), false), undefined);
    assert.equal(channelOf(Buffer.from('xaGk='), true), undefined);
  });
});
