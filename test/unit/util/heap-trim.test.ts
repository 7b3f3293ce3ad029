// When the shim gives a burst's garbage back (src/util/heap-trim.ts): above the floor and above
// what the last collection left plus the slack, never twice within the cooldown.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HeapTrim } from '../../../src/util/heap-trim';
import { silentLogger } from '../../../src/util/logger';

const MiB = 2 ** 20;

describe('HeapTrim', () => {
  function trim(): { t: HeapTrim; set: (mib: number) => void; advance: (ms: number) => void; collected: () => number } {
    let resident = 0;
    let now = 0;
    let collected = 0;
    const t = new HeapTrim({
      log: silentLogger(),
      residentBytes: () => resident,
      now: () => now,
      // A collection gives back all but 90 MiB.
      collect: async () => {
        collected++;
        resident = Math.min(resident, 90 * MiB);
      },
      floorBytes: 96 * MiB,
      slackBytes: 32 * MiB,
      cooldownMs: 30_000,
    });
    return { t, set: (mib) => (resident = mib * MiB), advance: (ms) => (now += ms), collected: () => collected };
  }

  it('collects only above the floor', async () => {
    const { t, set, collected } = trim();
    set(80);
    await t.check();
    assert.equal(collected(), 0);
    set(150);
    await t.check();
    assert.equal(collected(), 1);
  });

  it('not again within the cooldown, then only once the garbage grew by the slack over what was left', async () => {
    const { t, set, advance, collected } = trim();
    set(150);
    await t.check();
    set(150);
    advance(10_000);
    await t.check();
    assert.equal(collected(), 1, 'within the cooldown');
    advance(30_000);
    set(110);
    await t.check();
    assert.equal(collected(), 1, '90 MiB left + 32 of slack: 110 is not worth a pause');
    set(130);
    await t.check();
    assert.equal(collected(), 2);
  });

  it('does nothing without a way to collect', async () => {
    const t = new HeapTrim({ log: silentLogger(), residentBytes: () => 500 * MiB, collect: undefined });
    await t.check();
    t.start();
    t.stop();
    assert.equal(t.collections, 0);
  });

  it('collects through the inspector by default, and the resident size falls', async () => {
    let junk: Array<{ i: number; s: string }> | undefined = Array.from({ length: 500_000 }, (_, i) => ({ i, s: `x${i}` }));
    assert.equal(junk.length, 500_000);
    junk = undefined;
    const before = process.memoryUsage().heapUsed;
    const t = new HeapTrim({ log: silentLogger(), floorBytes: 0, slackBytes: 0 });
    await t.check();
    assert.equal(t.collections, 1);
    assert.ok(process.memoryUsage().heapUsed < before, `heap used ${before} -> ${process.memoryUsage().heapUsed}`);
  });
});
