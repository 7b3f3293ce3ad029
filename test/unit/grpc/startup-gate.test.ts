// The start-up gate (src/grpc/startup-gate.ts): open calls answer at once, the rest wait for
// `ready` in the order they came, or fail with their own cancel or deadline.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { CallContext } from '../../../src/cri/types';
import { CancelledError, DeadlineExceededError } from '../../../src/errors';
import { holdUntilReady } from '../../../src/grpc/startup-gate';

function ctx(method: string, controller = new AbortController()): CallContext {
  return { method, signal: controller.signal, deadline: undefined };
}

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void } {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** Lets every queued callback run (the held calls are promise chains). */
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('the start-up gate', () => {
  const ran: string[] = [];
  const impl = {
    Version: async (_req: unknown, _ctx: CallContext) => (ran.push('Version'), 'v'),
    ListContainers: async (req: { n: number }, _ctx: CallContext) => (ran.push(`List${req.n}`), req.n),
    GetContainerEvents: async (_req: unknown, send: (x: string) => boolean, _ctx: CallContext) => {
      ran.push('Events');
      send('first');
    },
  };

  it('answers open calls at once and holds the others, in order, until ready', async () => {
    ran.length = 0;
    const ready = deferred();
    const gated = holdUntilReady(impl, { ready: ready.promise, open: new Set(['Version']) });
    const sent: string[] = [];
    const events = gated.GetContainerEvents({}, (x) => sent.push(x) > 0, ctx('events'));
    const list1 = gated.ListContainers({ n: 1 }, ctx('list'));
    const list2 = gated.ListContainers({ n: 2 }, ctx('list'));
    assert.equal(await gated.Version({}, ctx('version')), 'v');
    await settle();
    assert.deepEqual(ran, ['Version'], 'nothing held ran before ready');
    ready.resolve();
    assert.deepEqual(await Promise.all([list1, list2, events]), [1, 2, undefined]);
    assert.deepEqual(ran, ['Version', 'Events', 'List1', 'List2']);
    assert.deepEqual(sent, ['first']);
    // Once ready, held calls go straight through.
    assert.equal(await gated.ListContainers({ n: 3 }, ctx('list')), 3);
  });

  it('fails a held call with its own cancel or deadline, and runs nothing for it', async () => {
    ran.length = 0;
    const ready = deferred();
    const gated = holdUntilReady(impl, { ready: ready.promise, open: new Set() });
    const cancel = new AbortController();
    const cancelled = gated.ListContainers({ n: 1 }, ctx('list', cancel));
    cancel.abort(new CancelledError('list: cancelled by the client'));
    await assert.rejects(cancelled, CancelledError);
    const late = new AbortController();
    late.abort(new DeadlineExceededError('list: the deadline passed'));
    await assert.rejects(gated.ListContainers({ n: 2 }, ctx('list', late)), DeadlineExceededError);
    ready.resolve();
    await settle();
    assert.deepEqual(ran, []);
  });

  it('lets the held calls run when ready fails too (the cache sends reads to Docker then)', async () => {
    ran.length = 0;
    const ready = deferred();
    const gated = holdUntilReady(impl, { ready: ready.promise, open: new Set() });
    const held = gated.ListContainers({ n: 7 }, ctx('list'));
    ready.reject(new Error('no event stream'));
    assert.equal(await held, 7);
    assert.deepEqual(ran, ['List7']);
  });
});
