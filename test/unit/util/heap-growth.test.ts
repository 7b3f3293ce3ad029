// The old generation's growth is V8's own but while a byte stream is open (src/util/heap-growth.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { STREAMING_HEAP_GROWING_PERCENT, StreamHeapGrowth } from '../../../src/util/heap-growth';

describe('the heap growth while streams are open', () => {
  it('is set when the first stream opens and given back to V8 when the last closes; an unmatched close changes nothing', () => {
    const set: string[] = [];
    const growth = new StreamHeapGrowth((flags) => set.push(flags));
    growth.closed();
    assert.deepEqual(set, [], 'no stream open: nothing to give back');
    growth.opened();
    growth.opened();
    assert.deepEqual(set, [`--heap-growing-percent=${STREAMING_HEAP_GROWING_PERCENT}`]);
    growth.closed();
    assert.equal(set.length, 1, 'one stream still open');
    growth.closed();
    assert.deepEqual(set.slice(1), ['--heap-growing-percent=0']);
    growth.closed();
    growth.opened();
    assert.deepEqual(set.slice(2), [`--heap-growing-percent=${STREAMING_HEAP_GROWING_PERCENT}`], 'the next stream sets it again');
  });
});
