// The idle part's targets (bench/idle-report.ts): each figure at its target passes, one past it misses.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkIdleTargets, type IdleResult, idleTableCells, IDLE_TARGETS, renderIdle, residentByMapping } from '../../../bench/idle-report';
import type { CensusEntry } from '../../support/census';

const MiB = 2 ** 20;

function result(over: { cpu: number; idleMiB: number; recoveredMiB: number; peakMiB?: number; storeFiles?: number; census?: CensusEntry[] }): IdleResult {
  return {
    storeFiles: over.storeFiles ?? IDLE_TARGETS.storeFiles,
    census: over.census ?? [],
    pods: 50,
    seconds: 60,
    shimCpuMsPer30s: over.cpu,
    shimThreadsCpuMsPer30s: { node: over.cpu },
    changesDuringIdle: 0,
    dockerdCpuMsPer30s: 5,
    idleRssBytes: over.idleMiB * MiB,
    idleMemory: { rss: over.idleMiB * MiB },
    bursts: [{ burst: '10000 fuzzed calls', afterBytes: 150 * MiB, recoveredBytes: over.recoveredMiB * MiB, underTargetAfterS: undefined, peakBytes: (over.peakMiB ?? 150) * MiB }],
  };
}

describe('idle targets', () => {
  it('passes at each target, misses just past it', () => {
    // Back to the idle RSS + 10% (90 MiB idle: 99 MiB).
    const at = checkIdleTargets(result({ cpu: IDLE_TARGETS.shimCpuMsPer30s, idleMiB: 90, recoveredMiB: 99, peakMiB: IDLE_TARGETS.burstPeakMiB }));
    assert.deepEqual(at.map((c) => c.pass), [true, true, true, true]);
    const timerRun: CensusEntry = { type: 'Timeout', site: 'Poller.arm (shim.js:1:1)', timer: true, runs: 2 };
    const ioRun: CensusEntry = { type: 'PIPEWRAP', site: 'events (shim.js:2:2)', timer: false, runs: 9 };
    const past = checkIdleTargets(
      result({ cpu: IDLE_TARGETS.shimCpuMsPer30s + 1, idleMiB: 90, recoveredMiB: 99.1, peakMiB: IDLE_TARGETS.burstPeakMiB + 0.1, census: [ioRun, timerRun] }),
    );
    assert.deepEqual(past.map((c) => c.pass), [false, false, false, false]);
    assert.match(past[1]!.target, /timer-driven runs/);
    assert.equal(past[1]!.value, '2 (2x Timeout (timer) made at Poller.arm (shim.js:1:1))', 'names the timer runs, not the I/O');
    assert.match(past[2]!.target, /peak RSS during 10000 fuzzed calls: <= 200 MiB/);
    assert.match(past[3]!.target, /after 10000 fuzzed calls: <= the idle RSS \+ 10% \(99\.0 MiB\)/);
    // A result from before the peak was read has no peak check.
    const old = result({ cpu: 0, idleMiB: 90, recoveredMiB: 90 });
    delete old.bursts[0]!.peakBytes;
    assert.equal(checkIdleTargets(old).length, 3);
    const smallStore = checkIdleTargets(result({ cpu: 0, idleMiB: 0, recoveredMiB: 0, storeFiles: IDLE_TARGETS.storeFiles - 1 }));
    assert.equal(smallStore[0]!.pass, false, 'an idle CPU figure on a store under the size it is set for does not pass');
  });

  it('names what ran while idle in its text', () => {
    const text = renderIdle(result({ cpu: 3, idleMiB: 70, recoveredMiB: 75, census: [{ type: 'TCPWRAP', site: 'grpc (shim.js:3:3)', timer: false, runs: 4 }] }));
    assert.match(text, /what ran while idle: 4x TCPWRAP made at grpc \(shim\.js:3:3\)/);
  });

  it('gives the table one row per figure and burst, 8 cells each', () => {
    const rows = idleTableCells(result({ cpu: 3, idleMiB: 70, recoveredMiB: 75 }));
    assert.equal(rows.length, 3);
    assert.ok(rows.every((r) => r.length === 8));
  });
});

describe('residentByMapping', () => {
  // An abridged /proc/<pid>/smaps of a shim: each mapping's line, then its fields.
  const mapping = (range: string, perms: string, name: string, rssKb: number): string =>
    [`${range} ${perms} 00000000 08:01 1234${name === '' ? '' : `                      ${name}`}`, 'Size:               2048 kB', `Rss:            ${rssKb} kB`, 'Pss:                 12 kB', `Private_Dirty:      ${rssKb} kB`, 'VmFlags: rd ex mr mw me dw'].join('\n');
  const smaps = [
    mapping('00400000-00b72000', 'r--p', '/usr/bin/node', 2048),
    mapping('00b72000-025fe000', 'r-xp', '/usr/bin/node', 23_000),
    mapping('02601000-05300000', 'r--p', '/usr/bin/node', 15_000),
    mapping('0563e000-0565c000', 'rw-p', '/usr/bin/node', 120),
    mapping('05a00000-06300000', 'rw-p', '[heap]', 9_000),
    mapping('1a000000-1a040000', 'rwxp', '', 2_200),
    mapping('2b000000-2c000000', 'rw-p', '', 20_000),
    mapping('7f0000000000-7f0000100000', 'r-xp', '/usr/lib/x86_64-linux-gnu/libc.so.6', 1_000),
    mapping('7ffebab67000-7ffebab88000', 'rw-p', '[stack]', 132),
  ].join('\n');

  it('sums Rss by mapping: the executable by permission, malloc\'s heap, libraries, anonymous code and data', () => {
    const kb = 1024;
    assert.deepEqual(residentByMapping(smaps, '/usr/bin/node'), {
      exeCode: 23_000 * kb,
      exeReadOnly: (2048 + 15_000) * kb,
      exeData: 120 * kb,
      libraries: 1_000 * kb,
      mallocHeap: 9_000 * kb,
      anonymousCode: 2_200 * kb,
      anonymous: (20_000 + 132) * kb,
    });
  });

  it('counts another executable (the single executable) as a library when node is not it', () => {
    const byMapping = residentByMapping(smaps, '/usr/bin/cri-docker-shim');
    assert.equal(byMapping.exeCode + byMapping.exeReadOnly + byMapping.exeData, 0);
    assert.equal(byMapping.libraries, (2048 + 23_000 + 15_000 + 120 + 1_000) * 1024);
  });

  it('renders each burst\'s CPU and breakdown beside its figures', () => {
    const r = result({ cpu: 3, idleMiB: 70, recoveredMiB: 75, peakMiB: 180 });
    r.bursts[0]!.recoveredMemory = { rss: 75 * MiB, exeCode: 23 * MiB };
    r.bursts[0]!.burstCpuMs = 1234;
    assert.match(renderIdle(r), /fuzzed calls: shim CPU 1234 ms; RSS 180\.0 MiB at its peak, 150\.0 MiB right after, 75\.0 MiB 60 s later \(rss 75\.0 MiB, exeCode 23\.0 MiB\)/);
  });
});
