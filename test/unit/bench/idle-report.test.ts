// The idle part's targets (bench/idle-report.ts): each figure at its target passes, one past it misses.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkIdleTargets, type IdleResult, idleTableCells, IDLE_TARGETS } from '../../../bench/idle-report';

const MiB = 2 ** 20;

function result(over: { cpu: number; idleMiB: number; recoveredMiB: number }): IdleResult {
  return {
    pods: 50,
    seconds: 60,
    shimCpuMsPer30s: over.cpu,
    shimThreadsCpuMsPer30s: { node: over.cpu },
    changesDuringIdle: 0,
    dockerdCpuMsPer30s: 5,
    idleRssBytes: over.idleMiB * MiB,
    idleMemory: { rss: over.idleMiB * MiB },
    bursts: [{ burst: '10000 fuzzed calls', afterBytes: 150 * MiB, recoveredBytes: over.recoveredMiB * MiB, underTargetAfterS: undefined }],
  };
}

describe('idle targets', () => {
  it('passes at each target, misses just past it', () => {
    const at = checkIdleTargets(result({ cpu: IDLE_TARGETS.shimCpuMsPer30s, idleMiB: IDLE_TARGETS.idleRssMiB, recoveredMiB: IDLE_TARGETS.afterBurstRssMiB }));
    assert.deepEqual(at.map((c) => c.pass), [true, true, true]);
    const past = checkIdleTargets(result({ cpu: IDLE_TARGETS.shimCpuMsPer30s + 1, idleMiB: IDLE_TARGETS.idleRssMiB + 0.1, recoveredMiB: IDLE_TARGETS.afterBurstRssMiB + 0.1 }));
    assert.deepEqual(past.map((c) => c.pass), [false, false, false]);
    assert.match(past[2]!.target, /after 10000 fuzzed calls/);
  });

  it('gives the table one row per figure and burst, 8 cells each', () => {
    const rows = idleTableCells(result({ cpu: 3, idleMiB: 70, recoveredMiB: 75 }));
    assert.equal(rows.length, 3);
    assert.ok(rows.every((r) => r.length === 8));
  });
});
