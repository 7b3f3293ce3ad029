// Streaming sessions are counted per pod, over the real shim and its default bounds: one pod's
// containers holding the pod's whole allowance get the next session refused with 429 and the
// pod named, port forward to it included, while an exec in another pod still runs.
import assert from 'node:assert/strict';
import { openFiles } from '../../bench/procfs';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_STREAMING_LIMITS } from '../../src/streaming/limits';
import { useShim } from '../support/fixture';
import { waitFor } from '../support/poll';
import { busybox, runContainer, SLEEP_FOREVER, type TestPod } from '../support/pods';
import { rawSpdyConnect, wsConnect, type WsSession } from '../support/streaming-clients';

const V4 = 'v4.channel.k8s.io';

describe('streaming sessions per pod', () => {
  const f = useShim({ pod: 'greedy' });
  const held: WsSession[] = [];
  let greedy: string[];
  let other: TestPod;
  let otherContainer: string;

  before(async () => {
    greedy = [await f.runContainer('first', SLEEP_FOREVER), await f.runContainer('second', SLEEP_FOREVER)];
    other = await f.startPod('other');
    otherContainer = await runContainer(f.client, other, busybox(f.run, 'quiet', SLEEP_FOREVER));
  });
  after(() => {
    for (const s of held) s.ws.terminate();
  });

  const execUrl = async (containerId: string, cmd: string[]) => (await f.client.runtime.Exec({ containerId, cmd, stdout: true })).url;
  const refusedWith429 = (pattern: RegExp) => (err: { status?: number; body?: string }) => {
    assert.equal(err.status, 429);
    assert.match(err.body ?? '', pattern);
    return true;
  };

  // Sockets only: cgroup files and storage walks of other containers on a shared node come and go meanwhile.
  const shimSockets = () => openFiles(f.shim.child.pid!).sockets;

  it('refuses a pod past its allowance, all its containers together, and still runs an exec in another pod', async (t) => {
    const perPod = DEFAULT_STREAMING_LIMITS.sessionsPerPod;
    const socketsBefore = shimSockets();
    // Half the allowance on each of the pod's two containers: no container alone is near it.
    for (let i = 0; i < perPod; i++) held.push(await wsConnect(await execUrl(greedy[i % 2]!, ['sh', '-c', 'echo up; exec sleep 3600']), [V4]));
    await waitFor('every command running in Docker', () => held.every((s) => s.received().get(1)?.toString() === 'up\n'), { timeoutMs: 20_000 });
    // What README's node-wide bound rests on: a held exec session costs the shim two or three
    // descriptors (its client's socket and Docker's; the pool to Docker keeps at most 8 idle).
    const perSession = (shimSockets() - socketsBefore) / perPod;
    t.diagnostic(`sockets per held exec session: ${perSession.toFixed(2)}`);
    assert.ok(perSession <= 3, `${perSession} sockets per session`);
    const refusal = new RegExp(`too many streaming sessions to pod sandbox ${f.pod.id} \\(at most ${perPod} at once\\)`);
    await assert.rejects(rawSpdyConnect(await execUrl(greedy[0]!, ['true']), V4), refusedWith429(refusal));
    const { url: forward } = await f.client.runtime.PortForward({ podSandboxId: f.pod.id, port: [8080] });
    await assert.rejects(rawSpdyConnect(forward, 'portforward.k8s.io'), refusedWith429(refusal));

    const elsewhere = await wsConnect(await execUrl(otherContainer, ['echo', 'another pod runs']), [V4]);
    const output = await elsewhere.done;
    assert.equal(output.get(1)?.toString(), 'another pod runs\n');

    // One session ended: the pod has a place again.
    held.pop()!.ws.terminate();
    const again = await waitFor('a place in the pod again', async () => wsConnect(await execUrl(greedy[1]!, ['true']), [V4]).catch(() => undefined), {
      timeoutMs: 10_000,
    });
    await again.done;
  });
});
