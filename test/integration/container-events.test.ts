// GetContainerEvents against real Docker: two clients listening through the shim see each
// transition of a sandbox and a container once and in order, whether the change came through
// the shim or straight from the Docker API, with the pod's and the containers' statuses as
// PodSandboxStatus and ContainerStatus give them; and the streams end with UNAVAILABLE when
// Docker goes away (a proxy in front of Docker that the test cuts).
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { criContract } from '../../src/cri/contract';
import type { ContainerEventResponse__Output } from '../../src/cri/types';
import type { RuntimeServiceClient } from '../../src/generated/runtime/v1/RuntimeService';
import { rejectsWith } from '../support/client';
import { useShim } from '../support/fixture';
import { dockerApi } from '../support/images';
import { waitFor } from '../support/poll';
import { busybox, createBehindTheBack, SLEEP_FOREVER, type TestPod } from '../support/pods';


type EventType = ContainerEventResponse__Output['containerEventType'];

const WHOLE_LIFE: EventType[] = ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT'];

/** One GetContainerEvents stream, recording what arrives and how it ended. */
class EventStream {
  readonly events: ContainerEventResponse__Output[] = [];
  ended: grpc.ServiceError | 'end' | undefined;
  private readonly client: RuntimeServiceClient;
  private readonly call: grpc.ClientReadableStream<ContainerEventResponse__Output>;

  constructor(address: string) {
    const v1 = criContract().runtime.v1;
    this.client = new v1.RuntimeService(address, grpc.credentials.createInsecure(), { 'grpc.enable_retries': 0 });
    this.call = this.client.GetContainerEvents({});
    this.call.on('data', (ev: ContainerEventResponse__Output) => this.events.push(ev));
    this.call.on('error', (err: grpc.ServiceError) => (this.ended = err));
    this.call.on('end', () => (this.ended ??= 'end'));
  }

  /** The types of the events about `id`, in the order they came. */
  typesFor(id: string): EventType[] {
    return this.events.filter((e) => e.containerId === id).map((e) => e.containerEventType);
  }

  /** Waits for the `n`th event about `id` and answers it. */
  async nth(id: string, n: number): Promise<ContainerEventResponse__Output> {
    return waitFor(`event ${n} for ${id.slice(0, 12)} (have ${JSON.stringify(this.typesFor(id))})`, () => {
      if (this.ended) throw new Error(`stream ended: ${this.ended === 'end' ? 'end' : this.ended.details}`);
      return this.events.filter((e) => e.containerId === id)[n - 1];
    });
  }

  close(): void {
    this.call.cancel();
    this.client.close();
  }
}

describe('GetContainerEvents', () => {
  let first: EventStream;
  let second: EventStream;
  let pod: TestPod;
  /** Containers whose whole life the streams saw. */
  const madeIds: string[] = [];
  // Registered before the fixture's, so the streams close before its clean-up stops the shim.
  after(() => {
    first?.close();
    second?.close();
  });
  const f = useShim({ behindProxy: true });
  const { run } = f;
  before(() => {
    first = new EventStream(f.shim.address);
    second = new EventStream(f.shim.address);
  });

  /** Waits for the `n`th event about `id` on the first stream, which must be of this type. */
  async function nthEvent(id: string, n: number, type: EventType): Promise<ContainerEventResponse__Output> {
    const ev = await first.nth(id, n);
    assert.equal(ev.containerEventType, type);
    return ev;
  }

  /** Both streams saw the whole life of container `id`, each step once, in order. */
  async function assertWholeLife(id: string): Promise<void> {
    await second.nth(id, 4);
    madeIds.push(id);
    assert.deepEqual(first.typesFor(id), WHOLE_LIFE);
    assert.deepEqual(second.typesFor(id), WHOLE_LIFE);
  }

  /** The event's pod status is PodSandboxStatus's, and its container statuses ContainerStatus's, as they are now. */
  async function assertStatusesCurrent(ev: ContainerEventResponse__Output, podId: string, containerIds: string[]): Promise<void> {
    const { status: podStatus } = await f.client.runtime.PodSandboxStatus({ podSandboxId: podId });
    assert.deepEqual(ev.podSandboxStatus, podStatus);
    assert.deepEqual(
      ev.containersStatuses.map((s) => s.id),
      containerIds,
    );
    for (const s of ev.containersStatuses) {
      const { status } = await f.client.runtime.ContainerStatus({ containerId: s.id });
      assert.deepEqual(s, status);
    }
  }

  it('a sandbox made through the shim: created and started, with its status', async () => {
    pod = await f.startPod('events');
    for (const stream of [first, second]) {
      const started = await stream.nth(pod.id, 2);
      assert.deepEqual(stream.typesFor(pod.id), ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT']);
      assert.equal(started.podSandboxStatus?.state, 'SANDBOX_READY');
      assert.equal(started.podSandboxStatus?.metadata?.uid, pod.config.metadata!.uid);
      await assertStatusesCurrent(started, pod.id, []);
    }
  });

  it('a container made through the shim: created, started, stopped, deleted, once each, with statuses', async () => {
    const { containerId: id } = await f.client.runtime.CreateContainer({ podSandboxId: pod.id, config: busybox(run, 'shim-made', SLEEP_FOREVER), sandboxConfig: pod.config });
    /** Its `n`th event has this type, shows it in this state (none once deleted), and statuses as they are now. */
    const check = async (n: number, type: EventType, state: string | undefined): Promise<void> => {
      const ev = await nthEvent(id, n, type);
      assert.equal(ev.containersStatuses.find((s) => s.id === id)?.state, state);
      await assertStatusesCurrent(ev, pod.id, state ? [id] : []);
    };
    await check(1, 'CONTAINER_CREATED_EVENT', 'CONTAINER_CREATED');
    await f.client.runtime.StartContainer({ containerId: id });
    await check(2, 'CONTAINER_STARTED_EVENT', 'CONTAINER_RUNNING');
    await f.client.runtime.StopContainer({ containerId: id, timeout: 0 });
    await check(3, 'CONTAINER_STOPPED_EVENT', 'CONTAINER_EXITED');
    await f.client.runtime.RemoveContainer({ containerId: id });
    await check(4, 'CONTAINER_DELETED_EVENT', undefined);

    await assertWholeLife(id);
    // Event times are what kubelet orders its cache by.
    const times = first.events.filter((e) => e.containerId === id).map((e) => BigInt(e.createdAt));
    for (let i = 1; i < times.length; i++) assert.ok(times[i]! > times[i - 1]!);
  });

  it('a container changed behind the shim with the Docker API yields the same events', async () => {
    const id = await createBehindTheBack(run, pod, 'behind');
    const made = dockerApi().getContainer(id);
    const createdEv = await nthEvent(id, 1, 'CONTAINER_CREATED_EVENT');
    assert.equal(createdEv.podSandboxStatus?.id, pod.id);
    assert.deepEqual(createdEv.containersStatuses.map((s) => s.id), [id]);

    await made.start();
    await nthEvent(id, 2, 'CONTAINER_STARTED_EVENT');
    await made.kill();
    const stoppedEv = await nthEvent(id, 3, 'CONTAINER_STOPPED_EVENT');
    assert.equal(stoppedEv.containersStatuses[0]?.state, 'CONTAINER_EXITED');
    await made.remove();
    const deletedEv = await nthEvent(id, 4, 'CONTAINER_DELETED_EVENT');
    assert.deepEqual(deletedEv.containersStatuses, []);
    await assertWholeLife(id);
  });

  it('a sandbox stopped and removed through the shim: stopped (NOTREADY), then deleted', async () => {
    await f.client.runtime.StopPodSandbox({ podSandboxId: pod.id });
    const stoppedEv = await first.nth(pod.id, 3);
    assert.equal(stoppedEv.containerEventType, 'CONTAINER_STOPPED_EVENT');
    assert.equal(stoppedEv.podSandboxStatus?.state, 'SANDBOX_NOTREADY');
    await assertStatusesCurrent(stoppedEv, pod.id, []);
    await f.removePod(pod);
    const deletedEv = await first.nth(pod.id, 4);
    assert.equal(deletedEv.containerEventType, 'CONTAINER_DELETED_EVENT');
    // kubelet drops the pod from its cache by the sandbox's metadata: the event still names it.
    assert.equal(deletedEv.podSandboxStatus?.id, pod.id);
    assert.equal(deletedEv.podSandboxStatus?.metadata?.uid, pod.config.metadata!.uid);
    await second.nth(pod.id, 4);
    // Docker's own events for the earlier containers arrived long since: still one event each.
    for (const id of [pod.id, ...madeIds]) {
      assert.deepEqual(first.typesFor(id), WHOLE_LIFE);
      assert.deepEqual(second.typesFor(id), WHOLE_LIFE);
    }
  });

  it('every stream ends with UNAVAILABLE when Docker goes away; listening works again once it is back', async () => {
    await f.proxy.down();
    for (const stream of [first, second]) {
      const ended = await waitFor('the stream to end', () => stream.ended);
      assert.notEqual(ended, 'end', 'the stream must fail, not end cleanly');
      rejectsWith(grpc.status.UNAVAILABLE, /lost track of Docker/)(ended);
    }
    // While the shim cannot vouch for Docker's state, a new listener is refused at once.
    const refused = new EventStream(f.shim.address);
    try {
      const ended = await waitFor('the refused stream to end', () => refused.ended);
      rejectsWith(grpc.status.UNAVAILABLE)(ended);
    } finally {
      refused.close();
    }

    await f.proxy.up();
    // Once the shim has resynced, a new listener is accepted and hears of new changes. Until
    // then it is refused; each try makes a pod and waits for its event or the refusal.
    let attempt = 0;
    const accepted = await waitFor(
      'a listener to be accepted once Docker is back',
      async () => {
        const stream = new EventStream(f.shim.address);
        const podAgain = await f.startPod(`events-again-${attempt++}`).catch((err: unknown) => {
          stream.close();
          throw err;
        });
        const heard = await waitFor('the event or the refusal', () => stream.ended ?? stream.events.find((e) => e.containerId === podAgain.id));
        if (heard !== stream.ended) return { stream, pod: podAgain };
        stream.close();
        await f.removePod(podAgain);
        return undefined;
      },
      { timeoutMs: 30_000 },
    );
    try {
      await accepted.stream.nth(accepted.pod.id, 2);
      assert.deepEqual(accepted.stream.typesFor(accepted.pod.id).slice(0, 2), ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT']);
    } finally {
      accepted.stream.close();
      await f.removePod(accepted.pod);
    }
  });

  it('a shutdown ends the streams with UNAVAILABLE instead of waiting them out', async () => {
    const { shim: own } = await f.startShim({ args: [`--docker-endpoint=unix://${f.proxy.socketPath}`] });
    const stream = new EventStream(own.address);
    // An event shows the stream was accepted before the shutdown began.
    const ownPod = await f.startPod('events-shutdown', {}, own.client);
    await stream.nth(ownPod.id, 1);
    assert.equal(await own.stop(), 0);
    const ended = await waitFor('the stream to end', () => stream.ended);
    stream.close();
    rejectsWith(grpc.status.UNAVAILABLE, /shutting down/)(ended);
    assert.doesNotMatch(own.output(), /cutting them off/);
  });
});
