// SingleFlight: overlapping callers of one key share one run of the work; one caller giving up
// leaves the others their answer; the work's signal aborts only when every caller has gone.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SingleFlight } from '../../../src/util/single-flight';

/** A work that runs until the test settles it, counting its starts and keeping its signal. */
function controllable<T>() {
  const runs: Array<{ signal: AbortSignal; resolve: (v: T) => void; reject: (e: unknown) => void }> = [];
  const work = (signal: AbortSignal): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      runs.push({ signal, resolve, reject });
    });
  return { runs, work };
}

/** Lets the flight's deferred start run. */
const started = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('SingleFlight', () => {
  it('runs the work once for callers that overlap, and all get its answer', async () => {
    const flights = new SingleFlight();
    const { runs, work } = controllable<string[]>();
    const a = flights.run('k', new AbortController().signal, work);
    const b = flights.run('k', new AbortController().signal, work);
    await started();
    assert.equal(runs.length, 1);
    const answer = ['x'];
    runs[0]!.resolve(answer);
    assert.equal(await a, answer);
    assert.equal(await b, answer);
    assert.equal(flights.size, 0);
  });

  it('starts afresh once the work has settled, and keeps different keys apart', async () => {
    const flights = new SingleFlight();
    const { runs, work } = controllable<number>();
    const first = flights.run('k', new AbortController().signal, work);
    const other = flights.run('other', new AbortController().signal, work);
    await started();
    assert.equal(runs.length, 2);
    runs[0]!.resolve(1);
    runs[1]!.resolve(2);
    assert.equal(await first, 1);
    assert.equal(await other, 2);
    const again = flights.run('k', new AbortController().signal, work);
    await started();
    assert.equal(runs.length, 3);
    runs[2]!.resolve(3);
    assert.equal(await again, 3);
  });

  it('gives every waiting caller the work\'s failure', async () => {
    const flights = new SingleFlight();
    const { runs, work } = controllable<number>();
    const a = flights.run('k', new AbortController().signal, work);
    const b = flights.run('k', new AbortController().signal, work);
    await started();
    const failure = new Error('Docker said no');
    runs[0]!.reject(failure);
    await assert.rejects(a, (err) => err === failure);
    await assert.rejects(b, (err) => err === failure);
  });

  it('rejects a caller that gives up with its reason at once; the other still gets the answer and the work goes on', async () => {
    const flights = new SingleFlight();
    const { runs, work } = controllable<number>();
    const quitter = new AbortController();
    const a = flights.run('k', quitter.signal, work);
    const b = flights.run('k', new AbortController().signal, work);
    await started();
    const reason = new Error('deadline passed');
    quitter.abort(reason);
    await assert.rejects(a, (err) => err === reason);
    assert.equal(runs[0]!.signal.aborted, false, 'the shared work is not stopped while a caller waits');
    // A caller arriving now joins the same work.
    const c = flights.run('k', new AbortController().signal, work);
    await started();
    assert.equal(runs.length, 1);
    runs[0]!.resolve(7);
    assert.equal(await b, 7);
    assert.equal(await c, 7);
  });

  it('stops the work when its last caller gives up, and the next caller starts anew', async () => {
    const flights = new SingleFlight();
    const { runs, work } = controllable<number>();
    const one = new AbortController();
    const two = new AbortController();
    const a = flights.run('k', one.signal, work);
    const b = flights.run('k', two.signal, work);
    await started();
    one.abort(new Error('one went'));
    two.abort(new Error('two went'));
    await assert.rejects(a);
    await assert.rejects(b);
    assert.equal(runs[0]!.signal.aborted, true, 'nobody waits: the work is told to stop');
    assert.equal(flights.size, 0);
    // The stopped work's own failure reaches nobody (no unhandled rejection).
    runs[0]!.reject(runs[0]!.signal.reason);
    const c = flights.run('k', new AbortController().signal, work);
    await started();
    assert.equal(runs.length, 2);
    assert.equal(runs[1]!.signal.aborted, false);
    runs[1]!.resolve(9);
    assert.equal(await c, 9);
  });

  it('starts nothing for a caller that had given up already', async () => {
    const flights = new SingleFlight();
    const { runs, work } = controllable<number>();
    const gone = new AbortController();
    const reason = new Error('gone');
    gone.abort(reason);
    await assert.rejects(flights.run('k', gone.signal, work), (err) => err === reason);
    await started();
    assert.equal(runs.length, 0);
    assert.equal(flights.size, 0);
  });

  it('turns a work that throws at once into a rejection', async () => {
    const flights = new SingleFlight();
    const failure = new Error('bad');
    await assert.rejects(
      flights.run('k', new AbortController().signal, () => {
        throw failure;
      }),
      (err) => err === failure,
    );
  });
});
