import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RateBudget } from '../../../src/streaming/limits';

describe('RateBudget', () => {
  it('grants its burst at once, all or none of each take, then refuses', () => {
    const budget = new RateBudget(1, 5);
    assert.equal(budget.take(3), true);
    assert.equal(budget.take(3), false, 'two left: a take of three is refused whole');
    assert.equal(budget.take(2), true);
    assert.equal(budget.take(), false);
  });

  it('regains at its rate, never past its burst', () => {
    const budget = new RateBudget(1_000_000, 4);
    assert.equal(budget.take(4), true);
    const start = performance.now();
    while (performance.now() - start < 1) {
      // the clock moves on by a millisecond: a thousand events' worth at this rate
    }
    assert.equal(budget.take(5), false, 'the burst bounds what was regained');
    assert.equal(budget.take(4), true);
  });
});
