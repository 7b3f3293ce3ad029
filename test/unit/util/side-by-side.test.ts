// sideBySide: independent steps at once, settled together, the first failure in argument order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sideBySide } from '../../../src/util/side-by-side';

describe('sideBySide', () => {
  it('settles only once every step has, even after an early failure', async () => {
    let finishSlow: () => void = () => undefined;
    let slowDone = false;
    const slow = new Promise<void>((resolve) => (finishSlow = resolve)).then(() => (slowDone = true));
    let settled = false;
    const both = sideBySide(Promise.reject(new Error('early')), slow).finally(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false, 'the slow step still runs');
    finishSlow();
    await assert.rejects(both, /early/);
    assert.equal(slowDone, true);
  });

  it('reports the first failure in argument order, not in time', async () => {
    const later = new Promise<void>((_, reject) => setImmediate(() => reject(new Error('first given'))));
    await assert.rejects(sideBySide(later, Promise.reject(new Error('first in time'))), /first given/);
  });

  it('resolves when every step does', async () => {
    await sideBySide(Promise.resolve(1), Promise.resolve('two'));
  });
});
