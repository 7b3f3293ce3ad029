import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CappedOutput, OutputBudget, truncationNote } from '../../../../src/shim/container/capped-output';

describe('ExecSync output cap', () => {
  it('shares one budget between stdout and stderr and counts what is dropped', () => {
    const budget = new OutputBudget(10);
    const out = new CappedOutput(budget);
    const err = new CappedOutput(budget);
    out.write(Buffer.from('123456'));
    err.write(Buffer.from('abcdef'));
    out.write(Buffer.from('zz'));
    assert.equal(out.contents().toString(), '123456');
    assert.equal(err.contents().toString(), 'abcd');
    assert.deepEqual([out.dropped, err.dropped, budget.remaining], [2, 2, 0]);
    assert.match(truncationNote('stdout', 2), /2 bytes of stdout were dropped/);
  });
});
