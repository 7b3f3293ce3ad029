// Port forward over WebSocket (issue 28), against the real shim and Docker: kubelet's channel
// protocol (two channels per port, each opened with its port; several ports in one connection;
// a port with nothing listening says so on its own error channel while the others carry on) and
// SPDY tunneled in a WebSocket as client-go (kubectl, critest --websocket-portforward) speaks it.
// Then the bounds, on servers run in-process with small ones: ports per connection, the pod's
// connection slots, the idle timeout, and a flood into a port whose server never reads.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseEndpoint } from '../../src/config/endpoint';
import { EngineApiClient } from '../../src/docker/engine-api-client';
import { MAX_WEBSOCKET_PORTS, type StreamingLimits } from '../../src/streaming/limits';
import { StreamingServer } from '../../src/streaming/streaming-server';
import { createLogger } from '../../src/util/logger';
import { useShim } from '../support/fixture';
import { waitFor } from '../support/poll';
import { busybox, runContainer } from '../support/pods';
import { wsConnect, wsSpdyTunnel, SPDY_TUNNEL_PORTFORWARD, type UpgradeRefusal, type WsSession } from '../support/streaming-clients';
import { memoryBytes } from '../../bench/procfs';

const V4 = 'v4.channel.k8s.io';
const V4_BASE64 = 'v4.base64.channel.k8s.io';
const HTTPD = 8080;
const ECHO = 8081;
/** Nothing listens there. */
const CLOSED = 8082;
/** Accepts connections and never reads them. */
const DEAF = 8083;
const MiB = 1024 * 1024;

const withPorts = (url: string, ports: number[]) => `${url}?${ports.map((p) => `port=${p}`).join('&')}`;
const le16 = (port: number) => Buffer.from([port & 0xff, port >> 8]);

/** What arrived on a channel after its two-byte port prefix. */
const after2 = (s: WsSession, channel: number) => s.received().get(channel)?.subarray(2) ?? Buffer.alloc(0);

const refused = (status: number, pattern: RegExp) => (err: Partial<UpgradeRefusal>) => {
  assert.equal(err.status, status);
  assert.match(err.body ?? '', pattern);
  return true;
};

describe('port forward over WebSocket', () => {
  const f = useShim({ pod: 'wspf' });
  const docker = new EngineApiClient(parseEndpoint('unix:///var/run/docker.sock'), 10_000);
  const servers: StreamingServer[] = [];
  const sessions: WsSession[] = [];
  const forwardUrl = async (port: number[] = []) => (await f.client.runtime.PortForward({ podSandboxId: f.pod.id, port })).url;

  before(async () => {
    await runContainer(
      f.client,
      f.pod,
      busybox(f.run, 'servers', {
        command: [
          'sh',
          '-c',
          `mkdir -p /www && echo hello-from-pod > /www/index.html && httpd -p 127.0.0.1:${HTTPD} -h /www && ` +
            `nc -ll -p ${DEAF} -e sleep 3600 & exec nc -ll -p ${ECHO} -e cat`,
        ],
      }),
    );
    // The servers may take a moment to listen: the echo server answering through a forward is the sign.
    await waitFor('the pod servers to answer', async () => {
      const s = await wsConnect(withPorts(await forwardUrl(), [ECHO, HTTPD]), [V4]);
      try {
        s.send(0, 'ping');
        s.send(2, 'GET /index.html HTTP/1.0\r\n\r\n');
        await waitFor('answers', () => after2(s, 0).toString() === 'ping' && /hello-from-pod/.test(after2(s, 2).toString()), { timeoutMs: 1_000 });
        return true;
      } finally {
        s.ws.terminate();
      }
    }, { timeoutMs: 20_000 });
  });
  after(async () => {
    for (const s of sessions) s.ws.terminate();
    for (const s of servers) await s.close();
  });

  async function serve(limits: Partial<StreamingLimits>): Promise<StreamingServer> {
    const server = new StreamingServer({ bindAddress: '127.0.0.1:0', docker, log: createLogger('fatal', 'json'), limits });
    servers.push(server);
    await server.listen();
    return server;
  }
  const inProcessUrl = (server: StreamingServer, ports: number[] = []) => server.urlFor({ kind: 'portforward', sandboxId: f.pod.id, ports });

  it('forwards several ports in one connection (v4.channel.k8s.io), each channel opened with its port; a closed remote is reported on its error channel and the others carry on', async () => {
    const s = await wsConnect(withPorts(await forwardUrl(), [ECHO, CLOSED, HTTPD]), [V4]);
    sessions.push(s);
    assert.equal(s.protocol, V4);
    const closed = new Promise<number>((resolve) => s.ws.once('close', resolve));
    // Port 8082 (index 1): its error channel is 3.
    await waitFor('the closed port reported', () => after2(s, 3).length > 0, { timeoutMs: 10_000 });
    assert.match(after2(s, 3).toString(), new RegExp(`^error forwarding port ${CLOSED} to pod ${f.pod.id}, uid : .*(ECONNREFUSED|refused)`));
    for (let channel = 0; channel < 6; channel++) assert.deepEqual(s.received().get(channel)?.subarray(0, 2), le16([ECHO, CLOSED, HTTPD][channel >> 1]!), `channel ${channel} opens with its port`);

    // Data both ways on the others, after the failure.
    const payload = Buffer.from(Array.from({ length: 200 * 1024 }, (_, i) => i % 251));
    for (let off = 0; off < payload.length; off += 16 * 1024) s.send(0, payload.subarray(off, off + 16 * 1024));
    s.send(4, 'GET /index.html HTTP/1.0\r\n\r\n');
    await waitFor('the echo of 200 KiB', () => after2(s, 0).length >= payload.length, { timeoutMs: 10_000 });
    assert.ok(after2(s, 0).equals(payload), 'the echo server sent back what was sent');
    await waitFor("httpd's answer", () => /hello-from-pod/.test(after2(s, 4).toString()), { timeoutMs: 10_000 });
    assert.equal(after2(s, 1).length, 0, 'nothing on the working ports’ error channels');
    assert.equal(after2(s, 5).length, 0);
    // The echo port still open: the connection stays.
    assert.equal(s.ws.readyState, s.ws.OPEN);
    s.send(0, 'still here');
    await waitFor('the echo after the others ended', () => after2(s, 0).subarray(payload.length).toString() === 'still here', { timeoutMs: 5_000 });
    s.ws.close();
    await closed;
  });

  it('takes the ports of the CRI request when the URL names none, speaks v4.base64.channel.k8s.io and no sub-protocol, and closes once every port is done', async () => {
    const b64 = await wsConnect(await forwardUrl([HTTPD]), [V4_BASE64]);
    sessions.push(b64);
    assert.equal(b64.protocol, V4_BASE64);
    b64.ws.send('0' + Buffer.from('GET /index.html HTTP/1.0\r\n\r\n').toString('base64'));
    const code = await new Promise<number>((resolve) => b64.ws.once('close', resolve));
    assert.deepEqual(b64.received().get(1), le16(HTTPD), 'the error channel carries only its port');
    assert.match(after2(b64, 0).toString(), /hello-from-pod/);
    assert.equal(code, 1000, 'closed by the server once its one port was done');

    const plain = await wsConnect(withPorts(await forwardUrl(), [HTTPD]), []);
    sessions.push(plain);
    assert.equal(plain.protocol, '');
    plain.send(0, 'GET /index.html HTTP/1.0\r\n\r\n');
    await plain.done;
    assert.match(after2(plain, 0).toString(), /hello-from-pod/);
  });

  it('refuses before the upgrade, with 400 and the reason: no port, a port the request did not name, a bad port, an unknown sub-protocol', async () => {
    await assert.rejects(wsConnect(await forwardUrl(), [V4]), refused(400, /query parameter "port" is required/));
    await assert.rejects(wsConnect(withPorts(await forwardUrl([HTTPD]), [ECHO]), [V4]), refused(400, new RegExp(`port ${ECHO} was not requested`)));
    await assert.rejects(wsConnect(`${await forwardUrl()}?port=80,0`, [V4]), refused(400, /"0" is not a port/));
    await assert.rejects(wsConnect(withPorts(await forwardUrl(), [HTTPD]), ['v5.channel.k8s.io']), refused(400, /SPDY\/3\.1\+portforward\.k8s\.io, v4\.channel\.k8s\.io/));
  });

  it('serves SPDY tunneled in a WebSocket (SPDY/3.1+portforward.k8s.io), several connections at once, a closed remote on its pair', async () => {
    const { client, protocol } = await wsSpdyTunnel(await forwardUrl());
    assert.equal(protocol, SPDY_TUNNEL_PORTFORWARD);
    const pair = async (port: number, requestID: string) => {
      const error = await client.open({ streamType: 'error', port: String(port), requestID }, { fin: true });
      const data = await client.open({ streamType: 'data', port: String(port), requestID });
      return { error, data };
    };
    const echo = await pair(ECHO, '1');
    const web = await pair(HTTPD, '2');
    const gone = await pair(CLOSED, '3');
    await client.until('the closed port reported', () => client.finished(gone.error));
    assert.match(client.dataOf(gone.error).toString(), /ECONNREFUSED|refused/);
    const payload = Buffer.alloc(300 * 1024, 0x5a);
    client.write(echo.data, payload);
    client.write(web.data, Buffer.from('GET /index.html HTTP/1.0\r\n\r\n'), true);
    await client.until('the echo of 300 KiB', () => client.dataOf(echo.data).length >= payload.length, 20_000);
    assert.ok(client.dataOf(echo.data).equals(payload));
    await client.until("httpd's answer", () => client.finished(web.data), 20_000);
    assert.match(client.dataOf(web.data).toString(), /hello-from-pod/);
    client.destroy();
  });

  it(`refuses more ports than a connection may have (at most ${MAX_WEBSOCKET_PORTS}, and half the session's streams) with 400`, async () => {
    const many = Array.from({ length: MAX_WEBSOCKET_PORTS + 1 }, () => HTTPD);
    await assert.rejects(wsConnect(withPorts(await forwardUrl(), many), [V4]), refused(400, new RegExp(`at most ${MAX_WEBSOCKET_PORTS} ports per port-forward connection`)));
    const small = await serve({ portForwardStreamsPerSession: 4 });
    await assert.rejects(wsConnect(withPorts(inProcessUrl(small), [HTTPD, ECHO, HTTPD]), [V4]), refused(400, /at most 2 ports per port-forward connection/));
    const two = await wsConnect(withPorts(inProcessUrl(small), [HTTPD, ECHO]), [V4]);
    sessions.push(two);
    two.ws.terminate();
  });

  it("counts each port in the pod's connection slots: past them the port's error channel says so and the others work", async () => {
    const server = await serve({ portForwardConnectionsPerPod: 1 });
    const s = await wsConnect(withPorts(inProcessUrl(server), [ECHO, HTTPD]), [V4]);
    sessions.push(s);
    await waitFor('the refusal', () => after2(s, 3).length > 0, { timeoutMs: 5_000 });
    assert.match(after2(s, 3).toString(), new RegExp(`too many port-forward connections to pod sandbox ${f.pod.id} \\(at most 1 at once\\)`));
    s.send(0, 'first');
    await waitFor('the echo', () => after2(s, 0).toString() === 'first', { timeoutMs: 5_000 });
    // The same pod's slot is held by this port, over SPDY tunneled too.
    const { client } = await wsSpdyTunnel(inProcessUrl(server));
    const error = await client.open({ streamType: 'error', port: String(HTTPD), requestID: '1' }, { fin: true });
    await client.open({ streamType: 'data', port: String(HTTPD), requestID: '1' });
    await client.until('the refusal', () => client.finished(error));
    assert.match(client.dataOf(error).toString(), /too many port-forward connections/);
    client.destroy();
    // Once the connection holding it is gone, the slot is free again.
    s.ws.terminate();
    const again = await waitFor('a slot again', async () => {
      const next = await wsConnect(withPorts(inProcessUrl(server), [HTTPD]), [V4]);
      next.send(0, 'GET /index.html HTTP/1.0\r\n\r\n');
      await next.done;
      return /hello-from-pod/.test(after2(next, 0).toString()) ? next : undefined;
    }, { timeoutMs: 5_000 });
    assert.ok(again);
  });

  it('closes a port-forward WebSocket idle for the idle timeout, channel protocol and tunneled SPDY alike', async () => {
    const server = await serve({ idleTimeoutMs: 500 });
    const started = Date.now();
    const s = await wsConnect(withPorts(inProcessUrl(server), [ECHO]), [V4]);
    sessions.push(s);
    const code = new Promise<number>((resolve) => s.ws.once('close', resolve));
    const { client } = await wsSpdyTunnel(inProcessUrl(server));
    assert.equal(await code, 1000);
    await client.until('the tunneled session to close', () => client.closed, 5_000);
    assert.equal(client.goAwayStatus, 0);
    assert.ok(Date.now() - started >= 500);
  });

  it("holds a flood into a port whose server never reads within bounds: the client is held back, the shim's memory bounded, and it answers meanwhile", async () => {
    const pid = f.shim.child.pid!;
    const s = await wsConnect(withPorts(await forwardUrl(), [DEAF]), [V4]);
    sessions.push(s);
    const message = Buffer.concat([Buffer.from([0]), Buffer.alloc(64 * 1024, 0x62)]);
    const total = 256 * MiB;
    const before = memoryBytes(pid);
    let sent = 0;
    for (;;) {
      s.ws.send(message);
      sent += message.length - 1;
      if (sent >= total) break;
      if (s.ws.bufferedAmount < MiB) continue;
      const room = await waitFor('room to write', () => s.ws.bufferedAmount < MiB, { timeoutMs: 2_000, intervalMs: 10 }).catch(() => false);
      if (!room) break;
    }
    const grown = memoryBytes(pid) - before;
    console.log(`flood into a port that never reads: ${(sent / MiB).toFixed(1)} MiB accepted of ${total / MiB} MiB, shim VmRSS +${(grown / MiB).toFixed(1)} MiB`);
    assert.ok(sent < total, 'the client was held back');
    assert.ok(grown < 48 * MiB, `the shim grew by ${(grown / MiB).toFixed(1)} MiB`);
    assert.equal((await f.client.runtime.Version({})).runtimeName, 'docker');
    // Another connection to the same pod is served meanwhile.
    const other = await wsConnect(withPorts(await forwardUrl(), [ECHO]), [V4]);
    sessions.push(other);
    other.send(0, 'meanwhile');
    await waitFor('the echo', () => after2(other, 0).toString() === 'meanwhile', { timeoutMs: 5_000 });
    s.ws.terminate();
  });
});
