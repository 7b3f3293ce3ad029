// When the shim gives a burst's garbage back (src/util/heap-trim.ts): above the floor and above
// what the last collection left plus the slack, never twice within the cooldown.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import pino from 'pino';
import { CHECK_MS, HeapTrim } from '../../../src/util/heap-trim';
import { silentLogger } from '../../../src/util/logger';

const MiB = 2 ** 20;

/** Lets the promise jobs a fired timer started run (no timer involved: they are mocked). */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

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
    set(110); // a collection that gives back less than the slack: no follow-up
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

  /** A started trim on mocked timers and clock: resident at `mib`, a collection leaves at most `leftMiB` (default: as it was). */
  function onMockedTimers(t: TestContext, mib: number, leftMiB?: number): { h: HeapTrim; set: (mib: number) => void; looks: () => number; collected: () => number } {
    t.mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] });
    let resident = mib * MiB;
    let looks = 0;
    let collected = 0;
    const h = new HeapTrim({
      log: silentLogger(),
      residentBytes: () => (looks++, resident),
      now: () => Date.now(),
      collect: async () => {
        collected++;
        if (leftMiB !== undefined) resident = Math.min(resident, leftMiB * MiB);
      },
      floorBytes: 96 * MiB,
      slackBytes: 32 * MiB,
      cooldownMs: 30_000,
    });
    h.start(CHECK_MS);
    return { h, set: (m) => (resident = m * MiB), looks: () => looks, collected: () => collected };
  }

  it('looks at nothing while idle: only activity arms one look, CHECK_MS later, however many calls came', async (t) => {
    const { h, looks, collected } = onMockedTimers(t, 150);
    t.mock.timers.tick(CHECK_MS);
    await settle();
    // A look reads the resident size, and once more after a collection.
    assert.deepEqual([looks(), collected()], [2, 1], 'one look for start-up\'s garbage');
    t.mock.timers.tick(3_600_000);
    await settle();
    assert.equal(looks(), 2, 'an idle hour: not one look');

    for (let i = 0; i < 1_000; i++) h.activity();
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(looks(), 3, 'a thousand calls: one look');
    assert.equal(collected(), 1, '150 MiB is what the last collection left: not worth another while calls come');
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(looks(), 5, 'calls came while it waited: one more look, quiet, which collects (above the floor) and reads again');
    assert.equal(collected(), 2);
    t.mock.timers.tick(3_600_000);
    await settle();
    assert.equal(looks(), 5, 'then an idle hour: not one look');
    h.stop();
  });

  it('a look the cooldown held back looks again once it is over, with no activity; a collection arms none', async (t) => {
    const { h, set, collected } = onMockedTimers(t, 150, 90);
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(collected(), 1);
    set(200); // a burst right after
    h.activity();
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(collected(), 1, 'within the cooldown');
    assert.equal(h.armed, true, 'looked at again once the cooldown is over');
    t.mock.timers.tick(30_000);
    await settle();
    assert.equal(collected(), 2);
    assert.equal(h.armed, false, 'it gave back the slack or more, but nothing happened since: no look until the next activity');
    h.stop();
  });

  it('after a collection that gave back the slack or more, collects once more past the cooldown, above the floor, while calls keep coming', async (t) => {
    // A burst's last collection ran while its answers were still being written: they stay
    // under the slack above what it left, and calls go on (kubelet's pollers), so no look is quiet.
    const { h, set, collected } = onMockedTimers(t, 250, 160);
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(collected(), 1);
    set(150); // the answers written since and garbage now: 10 MiB under what the collection left
    for (let s = 0; s < 30; s++) {
      h.activity();
      t.mock.timers.tick(1_000);
      await settle();
    }
    assert.equal(collected(), 2, 'collected once the cooldown was over');
    set(110);
    for (let s = 0; s < 120; s++) {
      h.activity();
      t.mock.timers.tick(1_000);
      await settle();
    }
    assert.equal(collected(), 2, 'the follow-up gave back less than the slack: no more while calls go on under it');
    h.stop();
  });

  it('once the calls stop, collects what a burst left even under the slack; never while calls keep coming', async (t) => {
    // The first collection gives back less than the slack (110 -> 90): no follow-up is due.
    const { h, set, collected } = onMockedTimers(t, 110, 90);
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(collected(), 1);
    t.mock.timers.tick(30_000);
    set(110); // 20 MiB over what the collection left: under the slack
    h.activity();
    h.activity(); // calls go on while the look waits
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(collected(), 1, 'calls kept coming: the slack rules');
    h.activity(); // the last call, while the next look waits
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(collected(), 1, 'the last call came while it waited');
    assert.equal(h.armed, true, 'so one more look follows it');
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(collected(), 2, 'quiet since it was armed: collected');
    assert.equal(h.armed, false);
    t.mock.timers.tick(3_600_000);
    await settle();
    assert.equal(collected(), 2, 'nothing more without activity');
    h.stop();
  });

  it('a follow-up with nothing happened since its collection collects nothing: that one\'s result stands', async (t) => {
    // 250 MiB, left 120 by the first collection (above the floor, and it gave back the slack).
    const { h, collected } = onMockedTimers(t, 250, 120);
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(collected(), 1);
    assert.equal(h.armed, false, 'no look is armed by the collection itself');
    t.mock.timers.tick(30_000);
    await settle();
    assert.equal(collected(), 1, 'no answer written, no call, no stream since: no second collection');
    h.activity(); // then something happens: the follow-up is due, and collects above the floor
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(collected(), 2);
    h.stop();
  });

  it('when long work of its own ends (the image store\'s walk), looks at once, as a quiet look: under the slack, no timer', async (t) => {
    const { h, set, collected } = onMockedTimers(t, 110, 90);
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(collected(), 1, 'start-up\'s: 110 -> 90');
    t.mock.timers.tick(30_000);
    set(110); // what the walk left: 20 MiB over what the collection left, under the slack
    h.workEnded();
    await settle();
    assert.equal(collected(), 2, 'collected at once, no timer run');
    assert.equal(h.armed, false, 'and no look armed');
    set(90);
    h.workEnded();
    await settle();
    assert.equal(collected(), 2, 'within the cooldown');
    assert.equal(h.armed, false, 'under the floor: not worth a look once the cooldown is over');
    h.stop();
  });

  it('work that ended within the cooldown is looked at once the cooldown is over', async (t) => {
    const { h, set, collected } = onMockedTimers(t, 110, 90);
    t.mock.timers.tick(CHECK_MS);
    await settle();
    assert.equal(collected(), 1);
    set(110);
    h.workEnded();
    await settle();
    assert.equal(collected(), 1, 'within the cooldown');
    assert.equal(h.armed, true);
    t.mock.timers.tick(30_000);
    await settle();
    assert.equal(collected(), 2);
    h.stop();
  });

  it('work that ends before start() arms nothing and collects nothing', async () => {
    let collected = 0;
    const h = new HeapTrim({ log: silentLogger(), residentBytes: () => 500 * MiB, collect: async () => void collected++ });
    h.workEnded();
    await settle();
    assert.deepEqual([collected, h.armed], [0, false]);
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

  it('logs what the heap holds after a collection: its compiled code and bytecode too', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    const t = new HeapTrim({ log, residentBytes: () => 500 * MiB, collect: async () => undefined });
    await t.check();
    const line = lines.find((l) => l.msg === 'heap collected after a burst');
    assert.ok(line, 'one line per collection');
    for (const field of ['heapTotalMiB', 'heapUsedMiB', 'externalMiB', 'codeMiB', 'bytecodeMiB']) {
      assert.equal(typeof line[field], 'number', field);
      assert.ok((line[field] as number) >= 0, field);
    }
    assert.ok((line.codeMiB as number) > 0, 'this test runs compiled code');
  });
});
