// The streaming server's bounds, answered with a clear refusal: sessions per pod (HTTP
// 429 and the reason), streams a session may not open (RST_STREAM REFUSED_STREAM), port-forward
// connections per pod (the pair's error stream says why), port-forward halves whose pair never
// comes, idle sessions, oversized WebSocket messages. Servers run in-process with small bounds,
// on real containers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseEndpoint } from '../../src/config/endpoint';
import { EngineApiClient } from '../../src/docker/engine-api-client';
import type { StreamingLimits } from '../../src/streaming/limits';
import { StreamingServer } from '../../src/streaming/streaming-server';
import { RST_CANCEL, RST_REFUSED_STREAM } from '../../src/streaming/spdy/framing';
import { createLogger } from '../../src/util/logger';
import { useShim } from '../support/fixture';
import { waitFor } from '../support/poll';
import { busybox, runContainer, SLEEP_FOREVER } from '../support/pods';
import { rawSpdyConnect, wsConnect } from '../support/streaming-clients';

const V4 = 'v4.channel.k8s.io';

describe('streaming bounds: refusals and timeouts', () => {
  const f = useShim({ pod: 'bounds' });
  const docker = new EngineApiClient(parseEndpoint('unix:///var/run/docker.sock'), 10_000);
  const servers: StreamingServer[] = [];
  let sleeper: string;
  let web: string;

  before(async () => {
    sleeper = await f.runContainer('sleeper', SLEEP_FOREVER);
    web = await runContainer(
      f.client,
      f.pod,
      busybox(f.run, 'web', { command: ['sh', '-c', 'mkdir -p /www && echo hello-from-pod > /www/index.html && exec httpd -f -p 127.0.0.1:8080 -h /www'] }),
    );
  });
  after(async () => {
    for (const s of servers) await s.close();
  });

  async function serve(limits: Partial<StreamingLimits>, streamCreationTimeoutMs?: number): Promise<StreamingServer> {
    const server = new StreamingServer({ bindAddress: '127.0.0.1:0', docker, log: createLogger('fatal', 'json'), limits, streamCreationTimeoutMs });
    servers.push(server);
    await server.listen();
    return server;
  }
  const execUrl = (server: StreamingServer, cmd: string[], stdin = false, containerId = sleeper) =>
    server.urlFor({ kind: 'exec', containerId, sandboxId: f.pod.id, cmd, stdin, stdout: true, stderr: false, tty: false });
  const portForwardUrl = (server: StreamingServer) => server.urlFor({ kind: 'portforward', sandboxId: f.pod.id, ports: [8080] });

  it('refuses a session past the per-pod bound (its containers and port forwards together) with 429 and the reason (SPDY and WebSocket), and takes one again once one ends', async () => {
    const server = await serve({ sessionsPerPod: 2 });
    const first = await rawSpdyConnect(execUrl(server, ['sleep', '3600']), V4);
    const second = await wsConnect(execUrl(server, ['sleep', '3600'], false, web), [V4]);
    const refusal = new RegExp(`too many streaming sessions to pod sandbox ${f.pod.id} \\(at most 2 at once\\)`);
    await assert.rejects(rawSpdyConnect(execUrl(server, ['true']), V4), (err: { status?: number; body?: string }) => {
      assert.equal(err.status, 429);
      assert.match(err.body ?? '', refusal);
      return true;
    });
    await assert.rejects(wsConnect(execUrl(server, ['true'], false, web), [V4]), { status: 429 });
    await assert.rejects(rawSpdyConnect(portForwardUrl(server), 'portforward.k8s.io'), (err: { status?: number; body?: string }) => {
      assert.equal(err.status, 429);
      assert.match(err.body ?? '', refusal);
      return true;
    });
    first.destroy();
    second.ws.terminate();
    const again = await waitFor('a place for a session again', () => rawSpdyConnect(execUrl(server, ['true']), V4), { timeoutMs: 5_000 });
    again.destroy();
  });

  it('refuses streams an exec session does not need, and streams past a port-forward session bound, with RST_STREAM REFUSED_STREAM', async () => {
    const server = await serve({ portForwardStreamsPerSession: 4 });
    const exec = await rawSpdyConnect(execUrl(server, ['sleep', '3600']), V4);
    await exec.open({ streamType: 'error' }, { fin: true });
    const unexpected = await exec.open({ streamType: 'stdin' });
    assert.equal(exec.resetStatus(unexpected), RST_REFUSED_STREAM);
    await exec.open({ streamType: 'stdout' }, { fin: true });
    // It has all it needs: any further stream is refused, whatever it says it is.
    for (const streamType of ['stdout', 'resize', 'error']) {
      const extra = await exec.open({ streamType });
      assert.equal(exec.resetStatus(extra), RST_REFUSED_STREAM, streamType);
    }
    exec.destroy();

    const pf = await rawSpdyConnect(portForwardUrl(server), 'portforward.k8s.io');
    for (let i = 0; i < 4; i++) {
      const half = await pf.open({ streamType: 'error', port: '8080', requestID: String(i) });
      assert.equal(pf.resetStatus(half), undefined);
    }
    const fifth = await pf.open({ streamType: 'error', port: '8080', requestID: '4' });
    assert.equal(pf.resetStatus(fifth), RST_REFUSED_STREAM);
    pf.destroy();
  });

  it('resets a port-forward half whose pair does not come within the stream creation timeout', async () => {
    const server = await serve({}, 300);
    const pf = await rawSpdyConnect(portForwardUrl(server), 'portforward.k8s.io');
    const half = await pf.open({ streamType: 'data', port: '8080', requestID: '7' });
    await pf.until('the half to be reset', () => pf.resetStatus(half) !== undefined, 3_000);
    assert.equal(pf.resetStatus(half), RST_CANCEL);
    pf.destroy();
  });

  it('answers a port-forward connection past the per-pod bound on its error stream, and takes one again once one closes', async () => {
    const server = await serve({ portForwardConnectionsPerPod: 1 });
    const pair = async (c: Awaited<ReturnType<typeof rawSpdyConnect>>, requestId: string) => {
      const error = await c.open({ streamType: 'error', port: '8080', requestID: requestId }, { fin: true });
      const data = await c.open({ streamType: 'data', port: '8080', requestID: requestId });
      return { error, data };
    };
    const a = await rawSpdyConnect(portForwardUrl(server), 'portforward.k8s.io');
    // httpd may take a moment to listen: the first connection that answers holds the place.
    const held = await waitFor('a connection to httpd in the pod', async () => {
      const p = await pair(a, String(Math.random()));
      a.write(p.data, Buffer.from('GET /index.html HTTP/1.0\r\n'));
      await a.until('the error stream or a moment', () => a.finished(p.error), 300).catch(() => undefined);
      return a.finished(p.error) ? undefined : p;
    }, { timeoutMs: 15_000 });
    const b = await rawSpdyConnect(portForwardUrl(server), 'portforward.k8s.io');
    const refused = await pair(b, '1');
    await b.until('the refusal', () => b.finished(refused.error));
    assert.match(b.dataOf(refused.error).toString(), /too many port-forward connections to pod sandbox [0-9a-f]{64} \(at most 1 at once\)/);
    a.write(held.data, Buffer.from('\r\n'), true);
    await a.until('the answer', () => a.finished(held.data));
    assert.match(a.dataOf(held.data).toString(), /hello-from-pod/);
    const next = await waitFor('a place for a connection again', async () => {
      const p = await pair(b, String(Math.random()));
      b.write(p.data, Buffer.from('GET /index.html HTTP/1.0\r\n\r\n'), true);
      await b.until('an answer', () => b.finished(p.data));
      return /hello-from-pod/.test(b.dataOf(p.data).toString()) ? p : undefined;
    }, { timeoutMs: 5_000 });
    assert.ok(next);
    a.destroy();
    b.destroy();
  });

  it('closes sessions idle for the idle timeout: exec and port forward over SPDY, exec over WebSocket', async () => {
    const server = await serve({ idleTimeoutMs: 500 });
    const started = Date.now();
    const exec = await rawSpdyConnect(execUrl(server, ['sleep', '3600'], true), V4);
    await exec.open({ streamType: 'error' }, { fin: true });
    await exec.open({ streamType: 'stdin' });
    await exec.open({ streamType: 'stdout' }, { fin: true });
    const pf = await rawSpdyConnect(portForwardUrl(server), 'portforward.k8s.io');
    const ws = await wsConnect(execUrl(server, ['sleep', '3600'], true), [V4]);
    const wsClosed = new Promise<number>((resolve) => ws.ws.once('close', resolve));
    await exec.until('the exec session to close', () => exec.closed, 5_000);
    await pf.until('the port-forward session to close', () => pf.closed, 5_000);
    assert.equal(await wsClosed, 1000);
    assert.equal(exec.goAwayStatus, 0);
    assert.ok(Date.now() - started >= 500);
  });

  it('closes a WebSocket whose message is over the bound with 1009', async () => {
    const server = await serve({ webSocketMaxMessageBytes: 64 * 1024 });
    const ws = await wsConnect(execUrl(server, ['sleep', '3600'], true), [V4]);
    const closed = new Promise<number>((resolve) => ws.ws.once('close', resolve));
    ws.send(0, Buffer.alloc(100 * 1024));
    const code = await Promise.race([closed, new Promise((r) => setTimeout(r, 5_000, 'still open after 5 s'))]);
    ws.ws.terminate();
    assert.equal(code, 1009);
  });
});
