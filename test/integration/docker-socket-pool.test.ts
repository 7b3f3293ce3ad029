// The Docker client's connection pool against the real Docker: a burst of 2,000 calls at once
// keeps this process's descriptors within the calls cap (before the pool, each call opened a
// connection of its own: 2,000 descriptors, and a flood of resizes once reached the limit), and
// hijacked exec connections count in the sessions' part, apart from the calls, and users' exec
// and attach in the streams' part, apart from both. Figures are logged.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { parseEndpoint } from '../../src/config/endpoint';
import { EngineApiClient } from '../../src/docker/engine-api-client';
import { DockerSocketPool, dockerSocketCaps } from '../../src/docker/socket-pool';
import { readOpenFilesLimit } from '../../src/kernel/open-files-limit';
import type { Duplex } from 'node:stream';
import { newTestRun, removeTestContainers, testLabels } from '../support/cleanup';
import { dockerApi, TEST_BUSYBOX_IMAGE } from '../support/images';
import { waitFor } from '../support/poll';

const DOCKER_SOCKET = '/var/run/docker.sock';
const BURST = 2_000;
/** Descriptors the test's own work may open beside Docker's connections (timers, reads of /proc). */
const MARGIN = 16;

const openFds = (): number => fs.readdirSync('/proc/self/fd').length;

describe('the Docker connection pool, against Docker', () => {
  const run = newTestRun();
  let container: string;

  before(async () => {
    const made = await dockerApi().createContainer({ Image: TEST_BUSYBOX_IMAGE, Cmd: ['sleep', '3600'], Labels: testLabels(run) });
    await made.start();
    container = made.id;
  });
  after(() => removeTestContainers({ run }));

  it(`answers ${BURST} inspects asked at once with this process's descriptors within the calls cap`, async () => {
    const caps = dockerSocketCaps(readOpenFilesLimit().soft);
    const docker = new EngineApiClient(parseEndpoint(`unix://${DOCKER_SOCKET}`), 60_000);
    try {
      assert.deepEqual(docker.sockets.caps, caps, 'the default pool is sized from the limit');
      const before = openFds();
      let peak = before;
      const started = performance.now();
      const answers = await Promise.all(
        Array.from({ length: BURST }, (_, i) =>
          docker.inspectContainer(container).then((inspect) => {
            if (i % 20 === 0) peak = Math.max(peak, openFds());
            return inspect.Id;
          }),
        ),
      );
      const ms = performance.now() - started;
      const afterBurst = openFds();
      console.log(`${BURST} inspects at once: ${Math.round(ms)} ms; descriptors before ${before}, peak ${peak}, after ${afterBurst}; calls cap ${caps.calls}`);
      assert.equal(answers.filter((id) => id === container).length, BURST, 'every inspect answered');
      assert.ok(peak - before <= caps.calls + MARGIN, `peak ${peak} descriptors, ${peak - before} over the ${before} before (cap ${caps.calls})`);
      assert.ok(afterBurst - before <= caps.calls + MARGIN);
    } finally {
      docker.close();
    }
  });

  it('counts hijacked exec connections in the sessions’ part until they close: one past the cap waits while calls go on', async () => {
    const docker = new EngineApiClient(parseEndpoint(`unix://${DOCKER_SOCKET}`), 30_000, new DockerSocketPool({ calls: 4, sessions: 2, streams: 2 }));
    const sessions: Duplex[] = [];
    try {
      const startSleep = async (): Promise<Duplex> => {
        const exec = await docker.createExec(container, { Cmd: ['sleep', '3600'], AttachStdout: true, AttachStderr: true, AttachStdin: false, Tty: false });
        return docker.startExec(exec, { tty: false, stdin: false });
      };
      const before = openFds();
      sessions.push(await startSleep(), await startSleep());
      const third = startSleep();
      await waitFor('the third exec to wait for a connection', () => docker.sockets.usage().sessions.waiting === 1);
      const answers = await Promise.all(Array.from({ length: 50 }, () => docker.inspectContainer(container)));
      assert.equal(answers.length, 50);
      assert.equal(docker.sockets.usage().sessions.waiting, 1, 'the third still waits');
      assert.ok(openFds() - before <= 2 + 4 + MARGIN, `${openFds() - before} descriptors over the ${before} before`);
      sessions[0]!.destroy();
      sessions.push(await third);
      assert.deepEqual(docker.sockets.usage().sessions, { inUse: 2, waiting: 0 });
    } finally {
      for (const s of sessions) s.destroy();
      docker.close();
    }
  });

  it('counts users’ exec and attach in the streams’ part: with it full they wait while the kubelet’s exec still starts', async () => {
    const docker = new EngineApiClient(parseEndpoint(`unix://${DOCKER_SOCKET}`), 30_000, new DockerSocketPool({ calls: 4, sessions: 2, streams: 2 }));
    const open: Duplex[] = [];
    try {
      const exec = (): Promise<string> =>
        docker.createExec(container, { Cmd: ['sleep', '3600'], AttachStdout: true, AttachStderr: true, AttachStdin: false, Tty: false });
      open.push(await docker.startExec(await exec(), { tty: false, stdin: false }, { userStream: true }));
      open.push(await docker.attachContainer(container, { stdin: false, stdout: true, stderr: true }, { userStream: true }));
      assert.deepEqual(docker.sockets.usage().streams, { inUse: 2, waiting: 0 });
      assert.deepEqual(docker.sockets.usage().sessions, { inUse: 0, waiting: 0 }, 'users’ sessions take nothing of the kubelet’s part');
      const third = docker.startExec(await exec(), { tty: false, stdin: false }, { userStream: true });
      await waitFor('the third user exec to wait for a connection', () => docker.sockets.usage().streams.waiting === 1);
      // ExecSync's exec: from the sessions' part, at once.
      open.push(await docker.startExec(await exec(), { tty: false, stdin: false }));
      assert.deepEqual(docker.sockets.usage().sessions, { inUse: 1, waiting: 0 });
      open[0]!.destroy();
      open.push(await third);
      assert.deepEqual(docker.sockets.usage().streams, { inUse: 2, waiting: 0 });
    } finally {
      for (const s of open) s.destroy();
      docker.close();
    }
  });

  it('keeps a call connection alive with Docker across 300 inspects in a row (and logs what that saves each)', async () => {
    const inspects = async (agent: http.Agent | false): Promise<{ medianMs: number; reused: number }> => {
      const times: number[] = [];
      let reused = 0;
      for (let i = 0; i < 300; i++) {
        const started = performance.now();
        await new Promise<void>((resolve, reject) => {
          const req = http.get({ socketPath: DOCKER_SOCKET, path: `/containers/${container}/json`, agent }, (res) => {
            if (req.reusedSocket) reused++;
            res.resume().on('end', resolve).on('error', reject);
          });
          req.on('error', reject);
        });
        times.push(performance.now() - started);
      }
      return { medianMs: times.sort((a, b) => a - b)[150]!, reused };
    };
    const pool = new DockerSocketPool({ calls: 4, sessions: 1, streams: 1 });
    try {
      const kept = await inspects(pool.callAgent);
      const fresh = await inspects(false);
      console.log(`inspect median: ${kept.medianMs.toFixed(2)} ms on a kept connection, ${fresh.medianMs.toFixed(2)} ms on a new one each`);
      assert.equal(kept.reused, 299, 'one connection for all 300');
      assert.equal(fresh.reused, 0);
    } finally {
      pool.close();
    }
  });
});
