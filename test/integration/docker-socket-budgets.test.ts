// User streaming sessions and the kubelet's own calls draw Docker connections from separate
// budgets (src/docker/socket-pool.ts), over the real shim run at a descriptor limit of 1,024:
// users hold every exec session the node allows across pods, kubelet's exec probes hold half
// of the sessions' part, and still an ExecSync, a StopContainer and a PullImage in another pod
// answer at once (48, 54 and 99 ms measured). Before the budgets were split, 127 held sessions
// and the event stream filled the one shared part of 128: all three waited for a connection
// until the client's 30 s deadline (DEADLINE_EXCEEDED).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { dockerSocketCaps } from '../../src/docker/socket-pool';
import { DEFAULT_STREAMING_LIMITS } from '../../src/streaming/limits';
import { useShim } from '../support/fixture';
import { dockerApi } from '../support/images';
import { waitFor } from '../support/poll';
import { busybox, runContainer, SLEEP_FOREVER, type TestPod } from '../support/pods';
import type { PushedImage } from '../support/registry';
import { rawSpdyConnect, wsConnect, type WsSession } from '../support/streaming-clients';

const V4 = 'v4.channel.k8s.io';
const OPEN_FILES = 1_024;
const CAPS = dockerSocketCaps(OPEN_FILES);
/** Every user session the node allows: the node-wide cap, which is the Docker stream budget. */
const HELD = CAPS.streams;
/**
 * kubelet's exec probes in flight, holding half the sessions' part: were the user sessions on
 * that part too, they and these would fill it, and the calls measured below would wait.
 */
const PROBES = CAPS.sessions - CAPS.streams;
/** The gRPC deadline of each measured call: far past the 1 s asked, so a wait shows as a figure, not a hang. */
const CALL_DEADLINE_MS = 30_000;
/** A probe's command: marked, so that Docker's process list tells when all are running. */
const PROBE_SLEEP = '3599';

describe('Docker socket budgets: user streaming sessions apart from the kubelet’s calls', () => {
  const f = useShim({ openFiles: OPEN_FILES, registry: true });
  const held: WsSession[] = [];
  const probes: Array<Promise<unknown>> = [];
  const holders: string[] = [];
  let prober: string;
  let elsewhere: TestPod;
  let quiet: string;
  let stoppable: string;
  let image: PushedImage;

  before(async () => {
    const perPod = DEFAULT_STREAMING_LIMITS.sessionsPerPod;
    const pods = Math.ceil(HELD / perPod);
    for (let i = 0; i < pods; i++) {
      const pod = await f.startPod(`holder-${i}`);
      holders.push(await runContainer(f.client, pod, busybox(f.run, 'sleeper', SLEEP_FOREVER)));
    }
    const probed = await f.startPod('probed');
    prober = await runContainer(f.client, probed, busybox(f.run, 'probed', SLEEP_FOREVER));
    elsewhere = await f.startPod('elsewhere');
    quiet = await runContainer(f.client, elsewhere, busybox(f.run, 'quiet', SLEEP_FOREVER));
    // Exits on SIGTERM, so that a stop is prompt when it reaches Docker.
    stoppable = await runContainer(f.client, elsewhere, busybox(f.run, 'stoppable', { command: ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait'] }));
    ({ pushed: image } = await f.registryOnlyImage(f.registry, 'budgets:1'));
    f.removeImagesAfter([image.ref], { force: true });
  });
  after(() => {
    for (const s of held) s.ws.terminate();
  });

  const execUrl = async (containerId: string, cmd: string[]) => (await f.client.runtime.Exec({ containerId, cmd, stdout: true })).url;
  const deadline = (): grpc.CallOptions => ({ deadline: Date.now() + CALL_DEADLINE_MS });

  /** How long `call` took, and how it ended: 'ok' or its gRPC status name. */
  const timed = async (call: () => Promise<unknown>): Promise<{ ms: number; outcome: string }> => {
    const started = performance.now();
    let outcome = 'ok';
    try {
      await call();
    } catch (err) {
      const code = (err as { code?: number }).code;
      outcome = code === undefined ? String(err) : grpc.status[code]!;
    }
    return { ms: Math.round(performance.now() - started), outcome };
  };

  it(`answers ExecSync, StopContainer and PullImage at once with ${HELD} user exec sessions and ${PROBES} exec probes held`, async (t) => {
    t.diagnostic(`descriptor limit ${OPEN_FILES}: Docker sockets ${JSON.stringify(CAPS)}`);
    const perPod = DEFAULT_STREAMING_LIMITS.sessionsPerPod;
    for (let i = 0; i < HELD; i++) {
      held.push(await wsConnect(await execUrl(holders[Math.floor(i / perPod)]!, ['sh', '-c', 'echo up; exec sleep 3600']), [V4]));
    }
    await waitFor('every held session running in Docker', () => held.every((s) => s.received().get(1)?.toString() === 'up\n'), { timeoutMs: 60_000 });

    // The node is full of user sessions: one more, in a pod holding none, is refused at once.
    await assert.rejects(rawSpdyConnect(await execUrl(quiet, ['true']), V4), (err: { status?: number; body?: string }) => {
      assert.equal(err.status, 429);
      assert.match(err.body ?? '', new RegExp(`too many streaming sessions on this node \\(at most ${HELD} at once\\)`));
      return true;
    });

    for (let i = 0; i < PROBES; i++) {
      probes.push(f.client.runtime.ExecSync({ containerId: prober, cmd: ['sleep', PROBE_SLEEP], timeout: 120 }, { deadline: Date.now() + 180_000 }).catch(() => undefined));
    }
    await waitFor(
      `${PROBES} exec probes running in Docker`,
      async () => {
        const top = (await dockerApi().getContainer(prober).top({ ps_args: '-o pid,args' })) as { Processes: string[][] };
        return top.Processes.filter((p) => p[1] === `sleep ${PROBE_SLEEP}`).length === PROBES;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );

    const execSync = await timed(() => f.client.runtime.ExecSync({ containerId: quiet, cmd: ['echo', 'alive'], timeout: 5 }, deadline()));
    const stop = await timed(() => f.client.runtime.StopContainer({ containerId: stoppable, timeout: 10 }, deadline()));
    const pull = await timed(() =>
      f.client.images.PullImage({ image: { image: image.ref }, auth: { username: f.registry.username, password: f.registry.password } }, deadline()),
    );
    t.diagnostic(`ExecSync ${execSync.ms} ms (${execSync.outcome}), StopContainer ${stop.ms} ms (${stop.outcome}), PullImage ${pull.ms} ms (${pull.outcome})`);
    for (const [what, r] of [['ExecSync', execSync], ['StopContainer', stop], ['PullImage', pull]] as const) {
      assert.equal(r.outcome, 'ok', `${what} answered ${r.outcome} after ${r.ms} ms`);
      assert.ok(r.ms < 1_000, `${what} took ${r.ms} ms`);
    }
    const { status } = await f.client.runtime.ContainerStatus({ containerId: stoppable });
    assert.equal(status?.state, 'CONTAINER_EXITED');
  });
});
