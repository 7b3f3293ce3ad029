// Hostile streams against the real shim (issue 22): floods of stdin into a command that never
// reads it and of output to a client that stops reading must leave the shim's memory bounded
// (its VmRSS, read from /proc), and port forward must run one relay per pod, none once its
// sessions are gone, however quickly connections come and go, each costing kilobytes, not a
// Node process (issue 42: 42 MiB of VmRSS per forwarded pod with the Node relay).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { before, describe, it } from 'node:test';
import { waitFor } from '../support/poll';
import { useShim } from '../support/fixture';
import { busybox, runContainer, SLEEP_FOREVER, type TestPod } from '../support/pods';
import { rawSpdyConnect, type RawSpdyClient, wsConnect } from '../support/streaming-clients';
import { memoryBytes } from '../../bench/procfs';

const MiB = 1024 * 1024;
/**
 * How much more memory a flood may leave the shim holding. A freshly started shim gains some
 * 2 MiB a second by itself while it measures Docker's storage; before the bounds, each flood
 * here grew it by 78 to 375 MiB.
 */
const RSS_GROWTH_BOUND = 48 * MiB;

/** Processes whose parent is `pid` and whose command line names the port relay. */
function relaysOf(pid: number): number[] {
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== pid) continue;
      if (fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('port-relay')) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Writes with `write` (false: wait for room) until `total` bytes went out or no room came for
 * `stallMs`; answers the bytes written.
 */
async function flood(write: () => boolean, room: () => Promise<void>, chunk: number, total: number, stallMs = 1500): Promise<number> {
  let sent = 0;
  while (sent < total) {
    const more = write();
    sent += chunk;
    if (more) continue;
    const stalled = await Promise.race([room().then(() => false), sleep(stallMs).then(() => true)]);
    if (stalled) break;
  }
  return sent;
}

const fmt = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;

describe('streaming floods and port-forward relays against the real shim', () => {
  const f = useShim({ pod: 'floods' });
  const WEB = busybox(f.run, 'web', { command: ['sh', '-c', 'mkdir -p /www && echo hello-from-pod > /www/index.html && exec httpd -f -p 127.0.0.1:8080 -h /www'] });
  let sleeper: string;
  let shimPid: number;

  /** Each flood is measured in a shim of its own: memory an earlier one freed would hide growth. */
  const freshShim = async () => {
    const { shim } = await f.startShim();
    return { client: shim.client, pid: shim.child.pid! };
  };

  before(async () => {
    sleeper = await f.runContainer('sleeper', SLEEP_FOREVER);
    shimPid = f.shim.child.pid!;
    await runContainer(f.client, f.pod, WEB);
  });

  it('keeps RSS bounded under a stdin flood into a command that never reads it (spdystream-style SPDY, then WebSocket)', async () => {
    const total = 256 * MiB;
    const chunk = 32 * 1024;
    const payload = Buffer.alloc(chunk, 0x61);

    let shim = await freshShim();
    const spdyExec = await shim.client.runtime.Exec({ containerId: sleeper, cmd: ['sleep', '3600'], stdin: true, stdout: true });
    const spdy = await rawSpdyConnect(spdyExec.url, 'v4.channel.k8s.io');
    await spdy.open({ streamType: 'error' }, { fin: true });
    const stdin = await spdy.open({ streamType: 'stdin' });
    await spdy.open({ streamType: 'stdout' }, { fin: true });
    const before = memoryBytes(shim.pid);
    const sent = await flood(
      () => spdy.write(stdin, payload),
      () => new Promise((r) => spdy.socket.once('drain', r)),
      chunk,
      total,
    );
    await sleep(300);
    const after = memoryBytes(shim.pid);
    console.log(`stdin flood over SPDY: ${fmt(sent)} written, shim VmRSS ${fmt(before)} -> ${fmt(after)} (+${fmt(after - before)})`);
    const version = Date.now();
    assert.equal((await shim.client.runtime.Version({})).runtimeName, 'docker');
    assert.ok(Date.now() - version < 2000, 'the shim answers while the flood is held');
    spdy.destroy();

    shim = await freshShim();
    const wsExec = await shim.client.runtime.Exec({ containerId: sleeper, cmd: ['sleep', '3600'], stdin: true, stdout: true });
    const ws = await wsConnect(wsExec.url, ['v4.channel.k8s.io']);
    const message = Buffer.concat([Buffer.from([0]), Buffer.alloc(64 * 1024, 0x62)]);
    const wsBefore = memoryBytes(shim.pid);
    const wsSent = await flood(
      () => {
        ws.ws.send(message);
        return ws.ws.bufferedAmount < MiB;
      },
      () => waitFor('room to write', () => ws.ws.bufferedAmount < MiB, { timeoutMs: 60_000, intervalMs: 10 }).then(() => undefined),
      message.length,
      total,
    );
    await sleep(300);
    const wsAfter = memoryBytes(shim.pid);
    console.log(`stdin flood over WebSocket: ${fmt(wsSent)} written, shim VmRSS ${fmt(wsBefore)} -> ${fmt(wsAfter)} (+${fmt(wsAfter - wsBefore)})`);
    ws.ws.terminate();
    assert.ok(after - before < RSS_GROWTH_BOUND, `SPDY stdin flood grew the shim by ${fmt(after - before)}`);
    assert.ok(wsAfter - wsBefore < RSS_GROWTH_BOUND, `WebSocket stdin flood grew the shim by ${fmt(wsAfter - wsBefore)}`);
  });

  it('keeps RSS bounded while a client stops reading a flood of output, which flows again once it reads (SPDY, then WebSocket)', async () => {
    let shim = await freshShim();
    const spdyExec = await shim.client.runtime.Exec({ containerId: sleeper, cmd: ['cat', '/dev/zero'], stdout: true, stderr: true });
    const spdy = await rawSpdyConnect(spdyExec.url, 'v4.channel.k8s.io');
    await spdy.open({ streamType: 'error' }, { fin: true });
    await spdy.open({ streamType: 'stdout' }, { fin: true });
    await spdy.open({ streamType: 'stderr' }, { fin: true });
    await spdy.until('the first MiB of output', () => spdy.received >= MiB);
    spdy.socket.pause();
    const before = memoryBytes(shim.pid);
    await sleep(2000);
    const after = memoryBytes(shim.pid);
    console.log(`output flood over SPDY, client not reading for 2 s: shim VmRSS ${fmt(before)} -> ${fmt(after)} (+${fmt(after - before)})`);
    const got = spdy.received;
    spdy.socket.resume();
    await spdy.until('output to flow again', () => spdy.received >= got + 4 * MiB, 20_000);
    spdy.destroy();

    shim = await freshShim();
    const wsExec = await shim.client.runtime.Exec({ containerId: sleeper, cmd: ['cat', '/dev/zero'], stdout: true });
    const ws = await wsConnect(wsExec.url, ['v4.channel.k8s.io']);
    const outputSoFar = () => ws.received().get(1)?.length ?? 0;
    await waitFor('the first MiB of output', () => outputSoFar() >= MiB, { timeoutMs: 10_000, intervalMs: 10 });
    ws.ws.pause();
    const wsBefore = memoryBytes(shim.pid);
    await sleep(2000);
    const wsAfter = memoryBytes(shim.pid);
    console.log(`output flood over WebSocket, client not reading for 2 s: shim VmRSS ${fmt(wsBefore)} -> ${fmt(wsAfter)} (+${fmt(wsAfter - wsBefore)})`);
    ws.ws.terminate();
    assert.ok(after - before < RSS_GROWTH_BOUND, `SPDY output flood grew the shim by ${fmt(after - before)}`);
    assert.ok(wsAfter - wsBefore < RSS_GROWTH_BOUND, `WebSocket output flood grew the shim by ${fmt(wsAfter - wsBefore)}`);
  });

  const session = async (pod: TestPod = f.pod) => {
    const { url } = await f.client.runtime.PortForward({ podSandboxId: pod.id, port: [8080] });
    return rawSpdyConnect(url, 'portforward.k8s.io');
  };
  /** Opens a pair; resolves once both streams were answered. */
  const pair = async (c: RawSpdyClient, requestId: number) => {
    const error = await c.open({ streamType: 'error', port: '8080', requestID: String(requestId) }, { fin: true });
    const data = await c.open({ streamType: 'data', port: '8080', requestID: String(requestId) });
    return { error, data };
  };
  const get = async (c: RawSpdyClient, requestId: number): Promise<string> => {
    const { data } = await pair(c, requestId);
    c.write(data, Buffer.from('GET /index.html HTTP/1.0\r\n\r\n'), true);
    await c.until(`the answer on pair ${requestId}`, () => c.finished(data), 20_000);
    return c.dataOf(data).toString();
  };
  /** A session to `pod` whose first connection got httpd's answer (httpd may take a moment to listen). */
  const answeringSession = (pod: TestPod = f.pod): Promise<RawSpdyClient> =>
    waitFor('the pod port to answer through port forward', async () => {
      const c = await session(pod);
      if ((await get(c, 0).catch(() => '')).includes('hello-from-pod')) return c;
      c.destroy();
      return undefined;
    }, { timeoutMs: 20_000 });

  it('runs one port-forward relay per pod whatever the connections, and leaves none once sessions close, even mid-start', async () => {
    (await answeringSession()).destroy();
    await waitFor('no relay left from the probe', () => relaysOf(shimPid).length === 0, { timeoutMs: 10_000 });

    // Two sessions, five connections each, all open at once (the request not finished, so that
    // httpd holds each connection): one relay.
    const a = await session();
    const b = await session();
    const open = await Promise.all([a, b].flatMap((c) => [1, 2, 3, 4, 5].map(async (id) => ({ c, ...(await pair(c, id)) }))));
    for (const { c, data } of open) c.write(data, Buffer.from('GET /index.html HTTP/1.0\r\n'));
    let during = 0;
    for (const deadline = Date.now() + 1500; Date.now() < deadline; await sleep(100)) during = Math.max(during, relaysOf(shimPid).length);
    for (const { c, data } of open) c.write(data, Buffer.from('\r\n'), true);
    for (const { c, data } of open) {
      await c.until(`the answer on stream ${data}`, () => c.finished(data), 20_000);
      assert.match(c.dataOf(data).toString(), /hello-from-pod/);
    }
    a.destroy();
    b.destroy();

    // Sessions closed as their relay starts, and again and again.
    for (let i = 0; i < 20; i++) {
      const c = await session();
      await pair(c, 1);
      c.destroy();
    }
    const afterLoop = await waitFor('relays to be gone', () => (relaysOf(shimPid).length === 0 ? [] : undefined), { timeoutMs: 5_000 }).catch(() => relaysOf(shimPid));
    console.log(`port forward: at most ${during} relay(s) for 10 connections in 2 sessions; ${afterLoop.length} left after 20 sessions closed mid-start`);
    assert.equal(during, 1, 'one relay serves every connection to the pod');
    assert.deepEqual(afterLoop, [], 'no relay is left once the sessions are gone');
  });

  it('costs under 2 MiB of RSS per port-forwarded pod (its relay\'s VmRSS)', async () => {
    const pods = [f.pod, ...(await Promise.all([1, 2, 3, 4].map((i) => f.startPod(`relay-${i}`))))];
    await Promise.all(pods.slice(1).map((pod) => runContainer(f.client, pod, WEB)));
    const sessions: RawSpdyClient[] = [];
    try {
      for (const pod of pods) sessions.push(await answeringSession(pod));
      const relays = relaysOf(shimPid);
      assert.equal(relays.length, pods.length, 'one relay per forwarded pod');
      const rss = relays.reduce((sum, pid) => sum + memoryBytes(pid), 0);
      console.log(`port forward into ${pods.length} pods: relays' VmRSS ${fmt(rss)} in all, ${((rss / pods.length) / 1024).toFixed(0)} KiB per pod`);
      assert.ok(rss / pods.length < 2 * MiB, `a forwarded pod costs ${fmt(rss / pods.length)} of relay`);
    } finally {
      for (const c of sessions) c.destroy();
    }
    await waitFor('relays to be gone', () => relaysOf(shimPid).length === 0, { timeoutMs: 10_000 });
  });
});
