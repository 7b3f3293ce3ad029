// GetContainerEvents over a real gRPC connection (in-process server, no Docker): a client that
// stops reading does not hold up one that reads, which gets every message in order; a burst
// larger than the per-listener queue ends a stream with RESOURCE_EXHAUSTED, through gRPC.
// (A client that merely stops reading is not detected here: node:http2 completes the writes
// and buffers them itself; see the report on feature/events.)
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { parseEndpoint } from '../../../../src/config/endpoint';
import { criContract } from '../../../../src/cri/contract';
import type { ContainerEventResponse, ContainerEventResponse__Output } from '../../../../src/cri/types';
import { EventHub, type ChangeSource } from '../../../../src/container-events/hub';
import type { RuntimeServiceClient } from '../../../../src/generated/runtime/v1/RuntimeService';
import { CriServer } from '../../../../src/grpc/grpc-server';
import { getContainerEvents } from '../../../../src/shim/container/get-container-events';
import type { ShimContext } from '../../../../src/shim/context';
import { silentLogger } from '../../../../src/util/logger';
import { removePaths } from '../../../support/cleanup';
import { waitFor } from '../../../support/poll';
import { tempDir } from '../../../support/temp';

const QUEUE_LIMIT = 8;
const CHANGES = 60;
/** Large enough that HTTP/2 flow control holds most of them back from a client that does not read. */
const PADDING = 'x'.repeat(64 * 1024);

class FakeSource implements ChangeSource<number> {
  watcher: { containerChanged(change: number): void; unsynced(reason: string): void } | undefined;
  listen(w: { containerChanged(change: number): void; unsynced(reason: string): void }): () => void {
    this.watcher = w;
    return () => (this.watcher = undefined);
  }
}

interface Recorded {
  indexes: number[];
  ended: grpc.ServiceError | 'end' | undefined;
}

function record(call: grpc.ClientReadableStream<ContainerEventResponse__Output>): Recorded {
  const rec: Recorded = { indexes: [], ended: undefined };
  call.on('data', (ev: ContainerEventResponse__Output) => rec.indexes.push(Number(ev.containerId.split(':')[0])));
  call.on('error', (err: grpc.ServiceError) => (rec.ended = err));
  call.on('end', () => (rec.ended ??= 'end'));
  return rec;
}

describe('GetContainerEvents back-pressure (in-process gRPC)', () => {
  const dir = tempDir('events-bp');
  const source = new FakeSource();
  const hub = new EventHub<number, ContainerEventResponse>(
    source,
    (n) => async () => [{ containerId: `${n}:${PADDING}`, containerEventType: 'CONTAINER_STARTED_EVENT', createdAt: String(n), containersStatuses: [] }],
    silentLogger(),
    { queueLimit: QUEUE_LIMIT },
  );
  const shim = { containerEvents: hub } as unknown as ShimContext;
  const server = new CriServer({ GetContainerEvents: (req, send, ctx) => getContainerEvents(shim, req, send, ctx) }, {}, silentLogger());
  let client: RuntimeServiceClient;

  before(async () => {
    const endpoint = parseEndpoint(`unix://${path.join(dir, 'cri.sock')}`);
    await server.listen(endpoint);
    client = new (criContract().runtime.v1.RuntimeService)(endpoint.url, grpc.credentials.createInsecure(), {});
  });
  after(async () => {
    client.close();
    await server.stop(1_000);
    removePaths(dir);
  });

  it('a client that stops reading does not hold up one that reads; both get everything in order', async () => {
    const stalled = client.GetContainerEvents({});
    stalled.pause();
    const stalledRec = record(stalled);
    const reading = client.GetContainerEvents({});
    const readingRec = record(reading);
    await waitFor('both listeners', () => hub.listenerCount === 2);

    // One change at a time, each once the reading client has the last: a burst larger than the
    // queue would (rightly) drop any client, however fast it reads.
    for (let n = 0; n < CHANGES; n++) {
      source.watcher?.containerChanged(n);
      await waitFor(`message ${n} at the reading client`, () => readingRec.indexes.length === n + 1, { intervalMs: 1 });
    }
    assert.deepEqual(readingRec.indexes, Array.from({ length: CHANGES }, (_, i) => i));
    assert.equal(readingRec.ended, undefined, 'the reading client stays subscribed');
    stalled.resume();
    await waitFor('the stalled client to catch up', () => stalledRec.indexes.length === CHANGES);
    assert.deepEqual(stalledRec.indexes, readingRec.indexes);
    stalled.cancel();
    reading.cancel();
    await waitFor('both listeners to leave', () => hub.listenerCount === 0);
  });

  it('a burst larger than the queue ends the stream with RESOURCE_EXHAUSTED after what was already sent', async () => {
    const call = client.GetContainerEvents({});
    const rec = record(call);
    await waitFor('the listener', () => hub.listenerCount === 1);
    // Offered all at once, faster than any stream drains: the listener's queue overflows.
    for (let n = 0; n < CHANGES; n++) source.watcher?.containerChanged(n);
    const ended = await waitFor('the stream to end', () => rec.ended);
    assert.notEqual(ended, 'end');
    assert.equal((ended as grpc.ServiceError).code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match((ended as grpc.ServiceError).details, /fell 8 events behind/);
    assert.ok(rec.indexes.length < CHANGES);
    // What it got before the drop is a prefix of the events: nothing skipped.
    assert.deepEqual(rec.indexes, Array.from({ length: rec.indexes.length }, (_, i) => i));
    assert.equal(hub.listenerCount, 0);
  });
});
