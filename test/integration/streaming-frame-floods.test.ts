// Floods of tiny frames against the real shim (issue 42): 1-byte SPDY data frames for a stream
// the session does not have, SPDY PINGs, 1-byte data frames on a valid stdin stream, and
// WebSocket pings, each on 8 connections at once from a child process, must leave CRI calls
// answered promptly; the sessions flooding frames for streams they do not have, and WebSocket
// connections flooding pings, are ended.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { GOAWAY_PROTOCOL_ERROR } from '../../src/streaming/spdy/framing';
import { useShim } from '../support/fixture';
import { latenciesUntil, startFrameFlood, summarize } from '../support/frame-flood';
import type { FloodKind } from '../support/frame-flooder';
import { waitFor } from '../support/poll';
import { SLEEP_FOREVER } from '../support/pods';

const CONNECTIONS = 8;
const FLOOD_MS = 3_000;
/** CRI Version's 99th percentile while the floods run (before the bounds: 0.9 s to over 60 s). */
const P99_BOUND_MS = 200;

describe('floods of tiny streaming frames against the real shim', () => {
  const f = useShim({ pod: 'frame-floods' });
  let sleeper: string;

  before(async () => {
    sleeper = await f.runContainer('sleeper', SLEEP_FOREVER);
  });

  /** Floods `kind` on CONNECTIONS exec sessions (each a command reading stdin) while Version is timed. */
  const floodWhileTimed = async (kind: FloodKind) => {
    const urls: string[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const { url } = await f.client.runtime.Exec({ containerId: sleeper, cmd: ['sh', '-c', 'cat >/dev/null'], stdin: true, stdout: true });
      urls.push(url);
    }
    await f.client.runtime.Version({});
    const flood = startFrameFlood({ kind, urls, ms: FLOOD_MS });
    try {
      await flood.ready;
      const latencies = await latenciesUntil(() => f.client.runtime.Version({}), flood.done);
      const sent = await flood.done;
      const summary = summarize(latencies);
      const mib = sent.reduce((a, b) => a + b, 0) / 1024 / 1024;
      console.log(`${kind} on ${CONNECTIONS} connections, ${FLOOD_MS} ms: ${mib.toFixed(1)} MiB written; Version ${JSON.stringify(summary)} ms; ${flood.closed.size} ended by the shim`);
      return { summary, flood };
    } catch (err) {
      await flood.stop();
      throw err;
    }
  };

  it('answers CRI calls and ends the sessions under 1-byte data frames for a stream they do not have (SPDY)', async () => {
    const { summary, flood } = await floodWhileTimed('spdy-unknown-stream');
    try {
      await waitFor('every flooding session to be ended by the shim', () => flood.closed.size === CONNECTIONS, {
        timeoutMs: 5_000,
        explain: () => `ended: ${JSON.stringify([...flood.closed])}`,
      });
      for (const [index, status] of flood.closed) assert.equal(status, GOAWAY_PROTOCOL_ERROR, `connection ${index} ended with GOAWAY PROTOCOL_ERROR`);
    } finally {
      await flood.stop();
    }
    assert.ok(summary.p99 < P99_BOUND_MS, `Version p99 ${summary.p99} ms`);
  });

  it('answers CRI calls under PING floods (SPDY)', async () => {
    const { summary, flood } = await floodWhileTimed('spdy-ping');
    await flood.stop();
    assert.ok(summary.p99 < P99_BOUND_MS, `Version p99 ${summary.p99} ms`);
  });

  it('answers CRI calls under 1-byte data frames on a valid stdin stream (SPDY)', async () => {
    const { summary, flood } = await floodWhileTimed('spdy-valid-stream');
    await flood.stop();
    assert.ok(summary.p99 < P99_BOUND_MS, `Version p99 ${summary.p99} ms`);
  });

  it('answers CRI calls and ends the connections under ping floods (WebSocket)', async () => {
    const { summary, flood } = await floodWhileTimed('ws-ping');
    try {
      await waitFor('every flooding connection to be ended by the shim', () => flood.closed.size === CONNECTIONS, { timeoutMs: 5_000 });
    } finally {
      await flood.stop();
    }
    assert.ok(summary.p99 < P99_BOUND_MS, `Version p99 ${summary.p99} ms`);
  });
});
