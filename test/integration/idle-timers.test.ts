// An idle shim runs nothing on a timer (issue 44): a node with a running pod, after calls of
// each kind (lifecycle, ExecSync, an exec over the streaming server, the metrics endpoint), and
// then no call: over a window longer than Node's http servers' 30 s connection check (which the
// shim's servers do without), the run census (../support/run-census.ts) sees no run a timer
// drove. What other shims' containers on this shared node set off is driven by their events,
// and the census tells the two apart.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { untilQuiet } from '../../bench/procfs';
import { censusEnv, describeCensus, startCensus } from '../support/census';
import { useShim } from '../support/fixture';
import { waitFor } from '../support/poll';
import { SLEEP_FOREVER } from '../support/pods';
import { scrape } from '../support/prom-text';
import { openExecStreams, spdyConnect } from '../support/streaming-clients';
import { tempDir } from '../support/temp';

/** Longer than the 30 s interval Node's http.Server runs by default. */
const WINDOW_MS = 35_000;
const censusDir = tempDir('census');
const censusFile = path.join(censusDir, 'census.json');

describe('an idle shim', () => {
  const f = useShim({ pod: 'idle', metrics: true, env: censusEnv(censusFile) });
  after(() => fs.rmSync(censusDir, { recursive: true, force: true }));

  it('runs nothing on a timer once calls stop', async () => {
    const containerId = await f.runContainer('sleeper', SLEEP_FOREVER);
    assert.equal((await f.client.runtime.ExecSync({ containerId, cmd: ['echo', 'hi'], timeout: '10' })).exitCode, 0);
    const { url } = await f.client.runtime.Exec({ containerId, cmd: ['echo', 'streamed'], stdout: true });
    const { conn, socket } = await spdyConnect(url, ['v4.channel.k8s.io']);
    assert.equal((await (await openExecStreams(conn, { stdout: true })).stdout).toString(), 'streamed\n');
    socket.destroy();
    assert.equal((await scrape('127.0.0.1', f.shim.metricsPort!)).status, 200);
    await f.client.runtime.ListPodSandboxMetrics({});
    await f.client.images.ImageFsInfo({});

    const pid = f.shim.child.pid!;
    // A fresh root directory: the shim first walks every layer of Docker's image store, once
    // (paced by timers of its own), and saves their figures when done.
    await waitFor('the start-up walk of the image store to end', () => fs.existsSync(path.join(f.shim.rootDir, 'image-layer-figures.json')), { timeoutMs: 300_000, intervalMs: 500 });
    // Best effort: a fresh shim's walk of the image store, or other shims' containers changing on
    // this shared node, may keep it busy; the census tells what they ran from what a timer ran.
    const { quiet, waitedMs } = await untilQuiet(pid, 60_000);
    console.log(`the shim was ${quiet ? '' : 'still not '}quiet after ${Math.round(waitedMs / 1000)} s`);
    const endCensus = startCensus(f.shim.child, censusFile);
    // An absence is watched for a while: the window is the measure, not a wait for something.
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
    const census = await endCensus();
    console.log(`what ran in the window: ${describeCensus(census.slice(0, 12))}`);
    const timers = census.filter((e) => e.timer);
    assert.deepEqual(timers, [], `timer-driven runs while idle: ${describeCensus(timers)}`);
  });
});
