import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkStreamTargets, renderStreamRows, type StreamFloorRow, type StreamRow } from '../../../bench/streams-report';

const MiB = 1024 * 1024;

function row(kase: StreamRow['case'], ratio: number, cpu: number): StreamRow {
  return {
    case: kase,
    transport: 'SPDY',
    bytes: 512 * MiB,
    rounds: 3,
    shim: { mibPerSecond: 100 * ratio, shimCpuSecondsPerGiB: cpu, dockerdCpuSecondsPerGiB: 1 },
    raw: { mibPerSecond: 100, dockerdCpuSecondsPerGiB: 1 },
    ratio,
  };
}

test('stdin passes at 0.9 of raw and 2.0 s/GiB; stdout and port forward need 1.0 of raw and 1.9 s/GiB', () => {
  const pass = (r: StreamRow): boolean[] => checkStreamTargets({ rows: [r] }).map((c) => c.pass);
  assert.deepEqual(pass(row('exec stdin', 0.9, 2.0)), [true, true]);
  assert.deepEqual(pass(row('exec stdin', 0.89, 2.01)), [false, false]);
  assert.deepEqual(pass(row('exec stdout', 0.95, 1.9)), [false, true]);
  assert.deepEqual(pass(row('port forward', 1.0, 1.95)), [true, false]);
});

test('one table row per case and transport, with the raw side named', () => {
  const [line] = renderStreamRows({ rows: [row('port forward', 2, 1)] });
  assert.match(line!, /^\| streams \| port forward 512 MiB over SPDY .*nc 127\.0\.0\.1.* \| 200; 1; 1\/1 \| \| 100 \| \| 2\.00 \|$/);
});

test("the machine's busy cores shim/raw in the row when both sides measured them, none in older results", () => {
  const measured = row('exec stdin', 0.75, 1);
  measured.shim.machineBusyCores = 1.67;
  measured.raw.machineBusyCores = 1.53;
  const [line] = renderStreamRows({ rows: [measured] });
  assert.match(line!, /; machine busy cores shim\/raw\) .* \| 75; 1; 1\/1; 1\.67\/1\.53 \|/);
  const [old] = renderStreamRows({ rows: [row('exec stdin', 0.75, 1)] });
  assert.doesNotMatch(old!, /busy/);
});

function floorRow(mibPerSecond: number): StreamFloorRow {
  return {
    case: 'exec stdin',
    bytes: 512 * MiB,
    rounds: 3,
    floor: { mibPerSecond, relayCpuSecondsPerGiB: 1.5, dockerdCpuSecondsPerGiB: 1, machineBusyCores: 1.8 },
    raw: { mibPerSecond: 100, dockerdCpuSecondsPerGiB: 1, machineBusyCores: 1.5 },
    ratio: mibPerSecond / 100,
  };
}

test("exec stdin's floor row follows the case's shim rows, with floor/raw and each transport's shim/floor", () => {
  const ws = { ...row('exec stdin', 0.72, 1), transport: 'WebSocket' as const };
  const lines = renderStreamRows({ rows: [row('exec stdin', 0.7, 1), ws, row('port forward', 1, 1)], floor: [floorRow(80)] });
  assert.equal(lines.length, 4);
  assert.match(lines[1]!, /over WebSocket/);
  assert.match(
    lines[2]!,
    /^\| streams \| exec stdin 512 MiB floor \(bare Node relay\) \(MiB\/s; relay CPU s\/GiB; dockerd CPU s\/GiB floor\/raw; machine busy cores floor\/raw; shim\/floor SPDY 0\.88, WebSocket 0\.90\) \| `docker exec -i` \(the CLI\) \| 80; 1\.5; 1\/1; 1\.8\/1\.5 \| \| 100 \| \| 0\.80 \|$/,
  );
  assert.match(lines[3]!, /port forward/);
  // Results from before the floor have none.
  const [old, ...more] = renderStreamRows({ rows: [row('exec stdin', 0.7, 1)] });
  assert.deepEqual(more, []);
  assert.doesNotMatch(old!, /floor/);
});

test("a floor under the ratio binds instead: the shim's time per byte at most 10% above the floor's", () => {
  const check = (shimRatio: number, floorMiBps: number) => checkStreamTargets({ rows: [row('exec stdin', shimRatio, 1)], floor: [floorRow(floorMiBps)] })[0]!;
  // The floor at 0.75 of raw: 75 / 1.1 = 68.2 MiB/s at least.
  assert.equal(check(0.69, 75).pass, true);
  assert.equal(check(0.68, 75).pass, false);
  assert.match(check(0.69, 75).target, /10% above its floor's \(a bare Node relay: 0\.75 x `docker exec -i` \(the CLI\), under 0\.9\), so >= 68 MiB\/s/);
  // A floor at or above the ratio leaves the ratio binding.
  assert.equal(check(0.89, 95).pass, false);
  assert.match(check(0.9, 95).target, /throughput >= 0\.9 x/);
  // The floor of another case does not bind this one.
  assert.equal(checkStreamTargets({ rows: [row('exec stdout', 0.95, 1)], floor: [floorRow(50)] })[0]!.pass, false);
});
