import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_UID_GID, numericId, parseUserSpec } from '../../../src/conventions/user-ids';

describe('numericId', () => {
  it('takes ASCII digits within 0..MAX_UID_GID', () => {
    assert.equal(numericId('0'), 0);
    assert.equal(numericId('1000'), 1000);
    assert.equal(numericId('007'), 7);
    assert.equal(numericId(String(MAX_UID_GID)), MAX_UID_GID);
  });

  it('refuses signs, spaces, invisible characters, other digits and anything past the range', () => {
    for (const text of ['', '+1', '-1', ' 1', '1 ', '1\uFEFF', '\u200B1', '1e3', '0x10', '١', String(MAX_UID_GID + 1), '4294967296', '18446744073709552616']) {
      assert.equal(numericId(text), undefined, JSON.stringify(text));
    }
  });
});

describe('parseUserSpec', () => {
  it('splits user and group at colons, as Docker does,, each an ID or a name', () => {
    assert.deepEqual(parseUserSpec('1000'), { user: { id: 1000 } });
    assert.deepEqual(parseUserSpec('app:staff'), { user: { name: 'app' }, group: { name: 'staff' } });
    assert.deepEqual(parseUserSpec('1000:1001'), { user: { id: 1000 }, group: { id: 1001 } });
    assert.deepEqual(parseUserSpec('1000:4294967296'), { user: { id: 1000 }, group: { name: '4294967296' } });
    assert.deepEqual(parseUserSpec(':5'), { user: undefined, group: { id: 5 } });
    assert.deepEqual(parseUserSpec(''), { user: undefined });
    assert.deepEqual(parseUserSpec('a:b:c'), { user: { name: 'a' }, group: { name: 'b' } });
  });
});
