// The Node comparison's pure parts (bench/node-compare.ts, bench/node-compare-report.ts): its
// options, and its table of the two sides with the first's figure over the second's.
import { strict as assert } from 'node:assert';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { nodeComparePlanFrom } from '../../../bench/node-compare';
import { type NodeCompareResult, renderNodeCompareHeader, renderNodeCompareTable } from '../../../bench/node-compare-report';
import { summarize } from '../../../bench/stats';
import type { StreamRow } from '../../../bench/streams-report';

const MiB = 2 ** 20;

describe('node comparison plan', () => {
  it('needs the other Node, and takes --quick and --out', () => {
    const full = nodeComparePlanFrom(['--other-node=/usr/bin/node']);
    assert.equal(full.mode, 'full');
    assert.equal(full.otherNode, '/usr/bin/node');
    assert.deepEqual([full.idleStarts, full.lifecycleRounds, full.containers, full.startupRuns, full.streams.rounds], [5, 20, 200, 10, 3]);
    assert.ok(full.outDir.endsWith(path.join('bench', 'results')), full.outDir);
    const quick = nodeComparePlanFrom(['--quick', '--other-node=node20/bin/node', '--out=/tmp/x']);
    assert.equal(quick.mode, 'quick');
    assert.equal(quick.otherNode, path.resolve('node20/bin/node'));
    assert.equal(quick.outDir, '/tmp/x');
    assert.ok(quick.lifecycleRounds < full.lifecycleRounds && quick.containers < full.containers);
    assert.equal(full.otherBuild, undefined);
  });

  it('takes another build on the bench\'s Node instead, or both', () => {
    const build = nodeComparePlanFrom(['--other-build=../before']);
    assert.equal(build.otherBuild, path.resolve('../before'));
    assert.equal(build.otherNode, process.execPath);
    const both = nodeComparePlanFrom(['--other-build=/b', '--other-node=/usr/bin/node']);
    assert.deepEqual([both.otherBuild, both.otherNode], ['/b', '/usr/bin/node']);
  });

  it('refuses no other side and unknown arguments', () => {
    assert.throws(() => nodeComparePlanFrom([]), /--other-node or --other-build is needed/);
    assert.throws(() => nodeComparePlanFrom(['--other-node=']), /--other-node or --other-build is needed/);
    assert.throws(() => nodeComparePlanFrom(['--other-node=/usr/bin/node', '--baseline=x']), /unknown argument\(s\): --baseline=x/);
  });
});

function streamRow(transport: StreamRow['transport'], mibPerSecond: number, cpu: number): StreamRow {
  return {
    case: 'exec stdout',
    transport,
    bytes: 1024 * MiB,
    rounds: 3,
    shim: { mibPerSecond, shimCpuSecondsPerGiB: cpu, dockerdCpuSecondsPerGiB: 1 },
    raw: { mibPerSecond: 100, dockerdCpuSecondsPerGiB: 1 },
    ratio: mibPerSecond / 100,
  };
}

function result(): NodeCompareResult {
  const start = (rssMiB: number, binaryMiB: number): Record<string, number> => ({ rss: rssMiB * MiB, exeCode: binaryMiB * MiB, exeReadOnly: 0, exeData: 0, anonymous: (rssMiB - binaryMiB) * MiB });
  return {
    meta: {
      date: '2026-12-01T10:00:00.000Z',
      mode: 'full',
      run: 'r1',
      docker: { version: '20.10.24', apiVersion: '1.41', kernel: '6.18', storageDriver: 'overlay2', cgroupDriver: 'cgroupfs' },
      machine: { cpuModel: 'EPYC', cores: 2, memoryBytes: 8 * 2 ** 30, os: 'Linux' },
      shimLogLevel: 'info',
      durationSeconds: 600,
    },
    sides: {
      project: { label: 'Node v24.22.3', node: '/p/node', version: 'v24.22.3', mainJs: '/b/dist/src/main.js' },
      other: { label: 'Node v20.20.2', node: '/usr/bin/node', version: 'v20.20.2', mainJs: '/tmp/c/dist/src/main.js' },
    },
    idleRss: { settleMs: 5000, project: [start(70, 40), start(66, 40), start(68, 41)], other: [start(60, 34), start(64, 36)] },
    lifecycle: [{ call: 'RunPodSandbox', project: summarize([100, 110, 120]), other: summarize([200, 220, 240]), raw: summarize([90, 95, 99]) }],
    streams: { project: [streamRow('SPDY', 150, 2)], other: [streamRow('SPDY', 100, 4)] },
    startup: { containers: 200, runs: 3, project: { version: summarize([150, 160, 170]), listContainers: summarize([300, 310, 330]) }, other: { version: summarize([200, 200, 200]), listContainers: summarize([300, 300, 300]) } },
  };
}

describe('node comparison table', () => {
  it('gives each figure on both sides and the first over the second', () => {
    const lines = renderNodeCompareTable(result()).split('\n');
    assert.equal(lines[0], '| part | figure | Node v24.22.3 | Node v20.20.2 | v24.22.3 / v20.20.2 |');
    assert.ok(lines.includes('| idle RSS | fresh shim, 5 s after its first answer, MiB: median (min-max) of 3 / 2 starts | 68.0 (66.0-70.0) | 62.0 (60.0-64.0) | 1.10 |'), lines.join('\n'));
    assert.ok(lines.includes("| idle RSS | of which node's binary (code, read-only data, data), MiB | 40.0 (40.0-41.0) | 35.0 (34.0-36.0) | 1.14 |"), lines.join('\n'));
    assert.ok(lines.includes('| lifecycle | RunPodSandbox p50 ms (3 rounds; raw Docker 95.0) | 110.0 | 220.0 | 0.50 |'), lines.join('\n'));
    assert.ok(lines.includes('| streams | exec stdout 1024 MiB over SPDY: MiB/s (3 rounds; docker CLI 100) | 150 | 100 | 1.50 |'), lines.join('\n'));
    assert.ok(lines.includes('| streams | exec stdout 1024 MiB over SPDY: shim CPU s/GiB | 2 | 4 | 0.50 |'), lines.join('\n'));
    assert.ok(lines.includes('| startup @200 | exec -> first Version answer, ms p50 / max (3 runs) | 160.0 / 170.0 | 200.0 / 200.0 | 0.80 |'), lines.join('\n'));
    assert.ok(lines.includes('| startup @200 | exec -> first ListContainers answer, ms p50 / max (3 runs) | 310.0 / 330.0 | 300.0 / 300.0 | 1.03 |'), lines.join('\n'));
    assert.equal(lines.length, 2 + 2 + 1 + 2 + 2);
  });

  it('refuses streams rows that do not pair up', () => {
    const r = result();
    r.streams.other = [streamRow('WebSocket', 100, 4)];
    assert.throws(() => renderNodeCompareTable(r), /do not match/);
  });

  it('names both sides, what each ran, and the engine', () => {
    const header = renderNodeCompareHeader(result());
    assert.match(header, /^# Node v24\.22\.3 and Node v20\.20\.2 \(full, 2026-12-01T10:00:00\.000Z, 600 s\)/);
    assert.match(header, /Docker 20\.10\.24 \(API 1\.41/);
    assert.match(header, /- Node v20\.20\.2: \/usr\/bin\/node runs \/tmp\/c\/dist\/src\/main\.js \(a copy of the build, its code cache made by that Node\)/);
  });
});
