// The adapter's per-call context (src/grpc/adapter.ts): what a call costs when its handler does
// not ask for the AbortSignal (no controller, no `cancelled` listener, no deadline timer, no
// debug log fields), and that the signal, read late, still says what happened to the call.
import { strict as assert } from 'node:assert';
import { EventEmitter } from 'node:events';
import { describe, it, type TestContext } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { CallContext } from '../../../src/cri/types';
import { CancelledError, DeadlineExceededError } from '../../../src/errors';
import { buildServiceHandlers } from '../../../src/grpc/adapter';
import type { Logger } from '../../../src/util/logger';
import { waitFor } from '../../support/poll';

/** What grpc-js hands a unary handler, as far as the adapter looks at it. */
class FakeCall extends EventEmitter {
  cancelled = false;
  constructor(
    readonly request: unknown,
    private readonly deadline: number = Infinity,
  ) {
    super();
  }
  getDeadline(): number {
    return this.deadline;
  }
  cancel(): void {
    this.cancelled = true;
    this.emit('cancelled');
  }
}

interface Answer {
  err: Partial<grpc.ServiceError> | null;
  res: unknown;
}

/** A logger whose debug is off, counting what is still asked of it. */
function infoLogger(): { log: Logger; debugCalls: () => number } {
  let debugCalls = 0;
  const log = { isLevelEnabled: (level: string) => level !== 'debug' && level !== 'trace', debug: () => void debugCalls++ };
  return { log: log as unknown as Logger, debugCalls: () => debugCalls };
}

const DEFINITION = { Version: { responseStream: false } } as unknown as grpc.ServiceDefinition;

/** Runs one unary call of `handler` through the adapter; settles with what the client would get. */
function callThrough(handler: (req: unknown, ctx: CallContext) => Promise<unknown>, call: FakeCall, log = infoLogger().log): Promise<Answer> {
  const handlers = buildServiceHandlers('runtime.v1.RuntimeService', DEFINITION, { Version: handler }, log, { begin: () => () => undefined });
  const unary = handlers['Version'] as grpc.handleUnaryCall<unknown, unknown>;
  return new Promise((resolve) => {
    unary(call as unknown as grpc.ServerUnaryCall<unknown, unknown>, (err, res) => resolve({ err: err as Partial<grpc.ServiceError> | null, res }));
  });
}

function countTimers(t: TestContext): () => number {
  const mocked = t.mock.method(globalThis, 'setTimeout');
  return () => mocked.mock.callCount();
}

describe('the adapter, for a handler that never reads ctx.signal', () => {
  it('arms no deadline timer, adds no cancel listener and builds no debug line', async (t) => {
    const timers = countTimers(t);
    const { log, debugCalls } = infoLogger();
    const call = new FakeCall({}, Date.now() + 60_000);
    const answer = await callThrough(async () => 'v', call, log);
    assert.deepEqual(answer, { err: null, res: 'v' });
    assert.equal(timers(), 0, 'no deadline timer for a call whose handler never looks at its signal');
    assert.equal(call.listenerCount('cancelled'), 0, 'no cancel listener either');
    assert.equal(debugCalls(), 0, 'no debug line built while debug is off');
  });

  it('still refuses a call whose deadline passed before it started, without running the handler', async () => {
    let ran = false;
    const answer = await callThrough(async () => (ran = true), new FakeCall({}, Date.now() - 1));
    assert.equal(answer.err?.code, grpc.status.DEADLINE_EXCEEDED);
    assert.equal(ran, false);
  });

  it('and one its client cancelled before it started', async () => {
    let ran = false;
    const call = new FakeCall({});
    call.cancelled = true;
    const answer = await callThrough(async () => (ran = true), call);
    assert.equal(answer.err?.code, grpc.status.CANCELLED);
    assert.equal(ran, false);
  });
});

describe('the adapter, for a handler that reads ctx.signal', () => {
  it('aborts the signal when the client cancels, with CancelledError', async () => {
    const call = new FakeCall({}, Date.now() + 60_000);
    const answer = callThrough(
      (_req, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
          call.cancel();
        }),
      call,
    );
    assert.equal((await answer).err?.code, grpc.status.CANCELLED);
  });

  it('gives a signal read after the cancel an aborted one', async () => {
    const call = new FakeCall({}, Date.now() + 60_000);
    let reason: unknown;
    await callThrough(async (_req, ctx) => {
      call.cancel();
      reason = ctx.signal.aborted ? ctx.signal.reason : undefined;
    }, call);
    assert.ok(reason instanceof CancelledError, `reason: ${String(reason)}`);
  });

  it('aborts the signal at the deadline, with DeadlineExceededError, and disarms the timer once answered', async (t) => {
    const call = new FakeCall({}, Date.now() + 100);
    let signal: AbortSignal | undefined;
    const answering = callThrough(
      (_req, ctx) =>
        new Promise((_resolve, reject) => {
          signal = ctx.signal;
          signal.addEventListener('abort', () => reject(signal!.reason), { once: true });
        }),
      call,
    );
    // The deadline timer is unref'd: polling keeps the test's event loop alive meanwhile.
    await waitFor('the deadline to abort the signal', () => signal?.aborted, { timeoutMs: 5_000, intervalMs: 10 });
    const answer = await answering;
    assert.equal(answer.err?.code, grpc.status.DEADLINE_EXCEEDED);
    assert.ok(signal?.reason instanceof DeadlineExceededError);

    const clears = t.mock.method(globalThis, 'clearTimeout');
    const later = new FakeCall({}, Date.now() + 60_000);
    let laterSignal: AbortSignal | undefined;
    await callThrough(async (_req, ctx) => (laterSignal = ctx.signal), later);
    assert.equal(clears.mock.callCount(), 1, 'the timer of an answered call is cleared');
    // grpc-js may report a cancel for a call already answered; it means nothing.
    later.cancel();
    assert.equal(laterSignal?.aborted, false);
  });
});
