import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { mask, unmask } from '../../../src/streaming/ws-mask';

/** RFC 6455's masking, a byte at a time, as ws's own fallback does it. */
function bytewise(data: Buffer, key: Buffer): Buffer {
  return Buffer.from(data.map((b, i) => b ^ key[i & 3]!));
}

test('unmask equals the byte-wise XOR at every alignment and length, views of a larger buffer included', () => {
  const key = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  const backing = randomBytes(4096);
  for (let offset = 0; offset < 8; offset++) {
    for (const length of [0, 1, 2, 3, 4, 5, 7, 31, 32, 33, 1000, 4096 - 8]) {
      const view = Buffer.from(backing).subarray(offset, offset + length);
      const before = Buffer.from(view);
      unmask(view, key);
      assert.deepEqual(view, bytewise(before, key), `offset ${offset}, length ${length}`);
    }
  }
});

test('unmask touches nothing outside its view', () => {
  const key = randomBytes(4);
  const backing = randomBytes(64);
  const copy = Buffer.from(backing);
  unmask(backing.subarray(3, 61), key);
  assert.deepEqual(backing.subarray(0, 3), copy.subarray(0, 3));
  assert.deepEqual(backing.subarray(61), copy.subarray(61));
});

test('mask writes the masked bytes at the offset', () => {
  const key = randomBytes(4);
  const source = randomBytes(100);
  const out = Buffer.alloc(110);
  mask(source, key, out, 10, 100);
  assert.deepEqual(out.subarray(10), bytewise(source, key));
  assert.deepEqual(out.subarray(0, 10), Buffer.alloc(10));
});
