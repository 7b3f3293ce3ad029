// The streams part's result (bench/streams.ts), issue 30's targets checked against it, and its
// rows of the bench table. Pure.

const MiB = 1024 * 1024;

/** The raw Docker side of each case: the docker CLI on the same container. */
const RAW_SIDE: Readonly<Record<StreamCase, string>> = {
  'exec stdout': '`docker exec` (the CLI)',
  'exec stdin': '`docker exec -i` (the CLI)',
  'port forward': '`docker exec -i <pod> nc 127.0.0.1 <port>` relay',
};

/** Throughput against the docker CLI's, and cri-dockerd 0.3.20's CPU per GiB on this machine (issue 30; port forward held to stdout's). */
export const STREAM_TARGETS = {
  stdinRatio: 0.9,
  /** Where a case's floor is below its ratio: the shim's time per byte above the floor's, as a share of it (issue 44). */
  costOverFloor: 0.1,
  stdoutRatio: 1.0,
  cpuSecondsPerGiB: { stdout: 1.9, stdin: 2.0 },
} as const;

export type StreamCase = 'exec stdout' | 'exec stdin' | 'port forward';
export type Transport = 'SPDY' | 'WebSocket';

export interface StreamSideResult {
  /** Median over the rounds. */
  mibPerSecond: number;
  /** The shim's utime+stime per GiB copied (shim side), dockerd's (both sides), seconds. */
  shimCpuSecondsPerGiB?: number;
  dockerdCpuSecondsPerGiB: number;
  /**
   * CPUs the whole machine kept busy during the transfers (median): near the machine's count, the
   * transfer was bound by the CPU every process in the pipeline shares, not by one stage.
   */
  machineBusyCores?: number;
}

export interface StreamRow {
  case: StreamCase;
  transport: Transport;
  bytes: number;
  rounds: number;
  shim: StreamSideResult & { shimCpuSecondsPerGiB: number };
  /** The docker CLI doing the same (one measurement per round, shared by both transports). */
  raw: StreamSideResult;
  /** shim MiB/s / raw MiB/s. */
  ratio: number;
}

/**
 * A case's floor (bench/stream-floor.ts): the same transfers through a bare Node relay (plain
 * socket piping, no framing) in a process of its own, in turn with the shim and the docker CLI.
 */
export interface StreamFloorRow {
  case: StreamCase;
  bytes: number;
  rounds: number;
  /** The relay's own utime+stime per GiB, beside the side's usual figures. */
  floor: StreamSideResult & { relayCpuSecondsPerGiB: number };
  /** The docker CLI's side of the same rounds (the shim rows' raw side). */
  raw: StreamSideResult;
  /** floor MiB/s / raw MiB/s: the nearest to the CLI a Node process in the path can come here. */
  ratio: number;
}

export interface StreamsResult {
  rows: StreamRow[];
  /**
   * The same rows for a second shim in the same turns (bench/node-compare.ts: the build on
   * another Node); the bench's own run has none, and its table and targets leave them out.
   */
  otherShim?: StreamRow[];
  /** Exec stdin's floor (results before it have none). */
  floor?: StreamFloorRow[];
}

/** Issue 30's streaming targets: throughput against raw Docker's, and the shim's CPU per GiB against cri-dockerd's. */
export function checkStreamTargets(r: StreamsResult): Array<{ target: string; value: string; pass: boolean }> {
  // (report.ts's TargetCheck, which imports this file.)
  const checks: Array<{ target: string; value: string; pass: boolean }> = [];
  for (const row of r.rows) {
    const name = `${row.case} over ${row.transport}`;
    const want = row.case === 'exec stdin' ? STREAM_TARGETS.stdinRatio : STREAM_TARGETS.stdoutRatio;
    const floor = r.floor?.find((f) => f.case === row.case);
    if (floor && floor.ratio < want) {
      // The floor binds: a bare relay in the path already falls short of the CLI by more than the
      // target allows, so the shim is held to its cost above the floor's, as the lifecycle rows are.
      const least = floor.floor.mibPerSecond / (1 + STREAM_TARGETS.costOverFloor);
      checks.push({
        target: `${name}: time per byte <= ${STREAM_TARGETS.costOverFloor * 100}% above its floor's (a bare Node relay: ${floor.ratio.toFixed(2)} x ${RAW_SIDE[row.case]}, under ${want}), so >= ${least.toFixed(0)} MiB/s`,
        value: `${row.shim.mibPerSecond} vs the floor's ${floor.floor.mibPerSecond} MiB/s (${(row.shim.mibPerSecond / floor.floor.mibPerSecond).toFixed(2)}; raw ${row.raw.mibPerSecond})`,
        pass: row.shim.mibPerSecond >= least,
      });
    } else {
      checks.push({ target: `${name}: throughput >= ${want} x ${RAW_SIDE[row.case]}`, value: `${row.ratio} (${row.shim.mibPerSecond} vs ${row.raw.mibPerSecond} MiB/s)`, pass: row.ratio >= want });
    }
    const cpu = row.case === 'exec stdin' ? STREAM_TARGETS.cpuSecondsPerGiB.stdin : STREAM_TARGETS.cpuSecondsPerGiB.stdout;
    checks.push({ target: `${name}: shim CPU <= ${cpu} s/GiB (cri-dockerd's)`, value: `${row.shim.shimCpuSecondsPerGiB} s/GiB`, pass: row.shim.shimCpuSecondsPerGiB <= cpu });
  }
  return checks;
}

/** The part's rows in the bench table's columns; a case's floor row after its shim rows. */
export function renderStreamRows(r: StreamsResult): string[] {
  const lines: string[] = [];
  r.rows.forEach((row, i) => {
    const cores = busy(row.shim, row.raw);
    lines.push(
      `| streams | ${row.case} ${row.bytes / MiB} MiB over ${row.transport} (MiB/s; shim CPU s/GiB; dockerd CPU s/GiB shim/raw${cores ? '; machine busy cores shim/raw' : ''}) | ${RAW_SIDE[row.case]} | ${row.shim.mibPerSecond}; ${row.shim.shimCpuSecondsPerGiB}; ${row.shim.dockerdCpuSecondsPerGiB}/${row.raw.dockerdCpuSecondsPerGiB}${cores} | | ${row.raw.mibPerSecond} | | ${row.ratio.toFixed(2)} |`,
    );
    if (r.rows[i + 1]?.case === row.case) return;
    for (const floor of r.floor?.filter((f) => f.case === row.case) ?? []) lines.push(floorLine(floor, r.rows.filter((s) => s.case === row.case)));
  });
  return lines;
}

/** A floor's row: its figures, floor/raw, and each transport's shim/floor (near 1: the shim costs no more than any relay). */
function floorLine(floor: StreamFloorRow, shimRows: readonly StreamRow[]): string {
  const cores = busy(floor.floor, floor.raw);
  const shimOverFloor = shimRows.map((s) => `${s.transport} ${(s.shim.mibPerSecond / floor.floor.mibPerSecond).toFixed(2)}`).join(', ');
  return `| streams | ${floor.case} ${floor.bytes / MiB} MiB floor (bare Node relay) (MiB/s; relay CPU s/GiB; dockerd CPU s/GiB floor/raw${cores ? '; machine busy cores floor/raw' : ''}${shimOverFloor ? `; shim/floor ${shimOverFloor}` : ''}) | ${RAW_SIDE[floor.case]} | ${floor.floor.mibPerSecond}; ${floor.floor.relayCpuSecondsPerGiB}; ${floor.floor.dockerdCpuSecondsPerGiB}/${floor.raw.dockerdCpuSecondsPerGiB}${cores} | | ${floor.raw.mibPerSecond} | | ${floor.ratio.toFixed(2)} |`;
}

/** '; side/raw' busy cores, when both sides measured them (results before them have none). */
function busy(side: StreamSideResult, raw: StreamSideResult): string {
  return side.machineBusyCores === undefined || raw.machineBusyCores === undefined ? '' : `; ${side.machineBusyCores}/${raw.machineBusyCores}`;
}
