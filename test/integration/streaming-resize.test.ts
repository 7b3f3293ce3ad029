// Terminal resize floods against the real shim and the real Docker (issue 26): a TTY exec
// session sent 65,536 one-byte resize messages, or one 1 MiB message packed with resize
// objects, over WebSocket (v4.channel.k8s.io) and SPDY, must leave the shim answering Version
// promptly with its descriptors and memory bounded, make Docker see at most ten resize calls a
// second, and leave the terminal at the last size sent; a session without a TTY ignores its
// resize channel. Each flood runs in a fresh shim behind a DockerProxy that counts Docker calls.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { RST_REFUSED_STREAM } from '../../src/streaming/spdy/framing';
import type { CriClient } from '../support/client';
import type { DockerProxy } from '../support/docker-proxy';
import { useShim } from '../support/fixture';
import { SLEEP_FOREVER } from '../support/pods';
import { parseStatus, rawSpdyConnect, wsConnect } from '../support/streaming-clients';
import { descriptorTargets, memoryBytes } from '../../bench/procfs';

const MiB = 1024 * 1024;
/** The size every flood ends with; the sizes before it are at most 500 wide, so none is this one. */
const LAST = { Width: 777, Height: 55 };
const LAST_STTY = `${LAST.Height} ${LAST.Width}`;
/** Waits (up to 20 s) for the terminal to have the last size, then a moment more, and prints it. */
const WAIT_FOR_LAST_SIZE = `for i in $(seq 400); do [ "$(stty size)" = "${LAST_STTY}" ] && break; sleep 0.05; done; sleep 0.5; echo size=$(stty size)`;

/** Resize messages packed into exactly `bytes` (newline-separated, padded with newlines), LAST last. */
function packedResizes(bytes: number): Buffer {
  const last = `${JSON.stringify(LAST)}\n`;
  const parts: string[] = [];
  let used = last.length;
  for (let i = 0; ; i++) {
    const text = `${JSON.stringify({ Width: 1 + (i % 500), Height: 1 + (i % 300) })}\n`;
    if (used + text.length > bytes) break;
    parts.push(text);
    used += text.length;
  }
  parts.push(last, '\n'.repeat(bytes - used));
  return Buffer.from(parts.join(''));
}

const descriptors = (pid: number): number => descriptorTargets(pid).length;
const resizeCalls = (proxy: DockerProxy): number => proxy.requests.filter((r) => /^POST \S*\/(exec|containers)\/[^/]+\/resize/.test(r)).length;
const yieldToEvents = () => new Promise((r) => setImmediate(r));
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;

interface Figures {
  versionCalls: number;
  versionMaxMs: number;
  fdBefore: number;
  fdPeak: number;
  rssBefore: number;
  rssPeak: number;
  resizeCalls: number;
  elapsedMs: number;
}

/**
 * Runs `session` while timing Version calls one after another and sampling the shim's
 * descriptors and VmRSS; answers the figures.
 */
async function measure(pid: number, client: CriClient, proxy: DockerProxy, session: () => Promise<void>): Promise<Figures> {
  const resizesBefore = resizeCalls(proxy);
  const fdBefore = descriptors(pid);
  const rssBefore = memoryBytes(pid);
  let fdPeak = fdBefore;
  let rssPeak = rssBefore;
  let versionCalls = 0;
  let versionMaxMs = 0;
  let done = false;
  const sampler = (async () => {
    while (!done) {
      const start = performance.now();
      assert.equal((await client.runtime.Version({})).runtimeName, 'docker');
      versionMaxMs = Math.max(versionMaxMs, performance.now() - start);
      versionCalls++;
      fdPeak = Math.max(fdPeak, descriptors(pid));
      rssPeak = Math.max(rssPeak, memoryBytes(pid));
      await pause(20);
    }
  })();
  const start = Date.now();
  try {
    await session();
  } finally {
    done = true;
    await sampler;
  }
  fdPeak = Math.max(fdPeak, descriptors(pid));
  rssPeak = Math.max(rssPeak, memoryBytes(pid));
  return { versionCalls, versionMaxMs, fdBefore, fdPeak, rssBefore, rssPeak, resizeCalls: resizeCalls(proxy) - resizesBefore, elapsedMs: Date.now() - start };
}

function report(what: string, f: Figures): void {
  console.log(
    `${what}: Version max ${f.versionMaxMs.toFixed(0)} ms over ${f.versionCalls} calls; descriptors ${f.fdBefore} -> peak ${f.fdPeak} ` +
      `(+${f.fdPeak - f.fdBefore}); VmRSS ${fmt(f.rssBefore)} -> peak ${fmt(f.rssPeak)} (+${fmt(f.rssPeak - f.rssBefore)}); ` +
      `${f.resizeCalls} Docker resize call(s) in ${f.elapsedMs} ms`,
  );
}

function assertBounded(what: string, f: Figures): void {
  assert.ok(f.fdPeak - f.fdBefore <= 100, `${what}: descriptors grew by ${f.fdPeak - f.fdBefore}`);
  assert.ok(f.rssPeak - f.rssBefore <= 50 * MiB, `${what}: VmRSS grew by ${fmt(f.rssPeak - f.rssBefore)}`);
  // The target is 200 ms, judged from the logged figures on a quiet machine; the test's bound only
  // catches a stall (a test machine shared with other work has stretched a 40 ms answer to 1.9 s).
  // What fails without the bounds is the descriptors and the resize calls (1,900 each before).
  assert.ok(f.versionMaxMs < 5000, `${what}: Version waited ${f.versionMaxMs.toFixed(0)} ms`);
  assert.ok(f.resizeCalls <= Math.floor(f.elapsedMs / 100) + 1, `${what}: ${f.resizeCalls} resize calls in ${f.elapsedMs} ms`);
}

type Flood = 'one-byte messages' | 'one 1 MiB message';

/** Sends the flood through `write` (one resize-channel message or frame a call), yielding now and then. */
async function sendFlood(flood: Flood, write: (data: Buffer) => void, messageBytes: number): Promise<void> {
  if (flood === 'one 1 MiB message') return write(packedResizes(messageBytes));
  const bytes = packedResizes(64 * 1024);
  for (let i = 0; i < bytes.length; i++) {
    write(bytes.subarray(i, i + 1));
    if (i % 1024 === 1023) await yieldToEvents();
  }
}

describe('terminal resize floods against the real shim', () => {
  const f = useShim({ pod: 'resize' });
  let sleeper: string;

  before(async () => (sleeper = await f.runContainer('sleeper', SLEEP_FOREVER)));

  /** A shim of its own for each flood: memory an earlier one freed would hide growth. */
  const freshShim = async () => {
    const { shim, proxy } = await f.startShimBehindProxy();
    const started = { client: shim.client, pid: shim.child.pid!, proxy };
    // For comparison: the same figures over half a second without a flood.
    report('  (idle, before)', await measure(started.pid, shim.client, proxy, async () => void (await pause(500))));
    return started;
  };

  for (const flood of ['one-byte messages', 'one 1 MiB message'] as const) {
    it(`WebSocket: a TTY exec sent ${flood} on channel 4 stays bounded and ends at the last size`, async () => {
      const { client, pid, proxy } = await freshShim();
      const { url } = await client.runtime.Exec({ containerId: sleeper, cmd: ['sh', '-c', WAIT_FOR_LAST_SIZE], tty: true, stdout: true });
      const ws = await wsConnect(url, ['v4.channel.k8s.io']);
      let output = '';
      const figures = await measure(pid, client, proxy, async () => {
        // The message is at most the server's 1 MiB, channel byte included.
        await sendFlood(flood, (data) => ws.send(4, data), MiB - 1);
        const got = await ws.done;
        output = got.get(1)?.toString() ?? '';
        assert.equal(parseStatus(got.get(3)!).status, 'Success');
      });
      report(`WebSocket TTY exec, ${flood}`, figures);
      assert.match(output, new RegExp(`size=${LAST_STTY}`));
      assertBounded(`WebSocket, ${flood}`, figures);
    });

    it(`SPDY: a TTY exec sent ${flood} on its resize stream stays bounded and ends at the last size`, async () => {
      const { client, pid, proxy } = await freshShim();
      const { url } = await client.runtime.Exec({ containerId: sleeper, cmd: ['sh', '-c', WAIT_FOR_LAST_SIZE], tty: true, stdout: true });
      const spdy = await rawSpdyConnect(url, 'v4.channel.k8s.io');
      const error = await spdy.open({ streamType: 'error' }, { fin: true });
      const stdout = await spdy.open({ streamType: 'stdout' }, { fin: true });
      const resize = await spdy.open({ streamType: 'resize' });
      const figures = await measure(pid, client, proxy, async () => {
        await sendFlood(flood, (data) => void spdy.write(resize, data), MiB);
        await spdy.until('the error stream to end', () => spdy.finished(error), 30_000);
      });
      report(`SPDY TTY exec, ${flood}`, figures);
      spdy.destroy();
      assert.match(spdy.dataOf(stdout).toString(), new RegExp(`size=${LAST_STTY}`));
      assert.equal(parseStatus(spdy.dataOf(error)).status, 'Success');
      assertBounded(`SPDY, ${flood}`, figures);
    });
  }

  it('a session without a TTY ignores the resize channel (WebSocket) or refuses the stream (SPDY)', async () => {
    const { client, pid, proxy } = await freshShim();
    const headLine = { containerId: sleeper, cmd: ['head', '-n', '1'], stdin: true, stdout: true };

    const wsExec = await client.runtime.Exec(headLine);
    const ws = await wsConnect(wsExec.url, ['v4.channel.k8s.io']);
    const wsFigures = await measure(pid, client, proxy, async () => {
      await sendFlood('one 1 MiB message', (data) => ws.send(4, data), MiB - 1);
      await sendFlood('one-byte messages', (data) => ws.send(4, data), MiB - 1);
      ws.send(0, 'after the floods\n');
      const got = await ws.done;
      assert.equal(got.get(1)?.toString(), 'after the floods\n');
    });
    report('WebSocket exec without a TTY, both floods', wsFigures);
    assert.equal(wsFigures.resizeCalls, 0, 'no resize call for a session without a terminal');
    assertBounded('WebSocket without a TTY', wsFigures);

    const spdyExec = await client.runtime.Exec(headLine);
    const spdy = await rawSpdyConnect(spdyExec.url, 'v4.channel.k8s.io');
    const error = await spdy.open({ streamType: 'error' }, { fin: true });
    const stdin = await spdy.open({ streamType: 'stdin' });
    const resize = await spdy.open({ streamType: 'resize' });
    // The session may reply to the stream before the exec's set-up refuses it: wait for the reset.
    await spdy.until('the resize stream to be refused', () => spdy.resetStatus(resize) !== undefined);
    assert.equal(spdy.resetStatus(resize), RST_REFUSED_STREAM);
    const stdout = await spdy.open({ streamType: 'stdout' }, { fin: true });
    spdy.write(resize, packedResizes(MiB));
    spdy.write(stdin, Buffer.from('spdy line\n'));
    await spdy.until('the error stream to end', () => spdy.finished(error), 30_000);
    spdy.destroy();
    assert.equal(spdy.dataOf(stdout).toString(), 'spdy line\n');
    assert.equal(resizeCalls(proxy), 0, 'no resize call from either session');
  });
});
