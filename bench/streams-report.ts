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

export interface StreamsResult {
  rows: StreamRow[];
}

/** Issue 30's streaming targets: throughput against raw Docker's, and the shim's CPU per GiB against cri-dockerd's. */
export function checkStreamTargets(r: StreamsResult): Array<{ target: string; value: string; pass: boolean }> {
  // (report.ts's TargetCheck, which imports this file.)
  const checks: Array<{ target: string; value: string; pass: boolean }> = [];
  for (const row of r.rows) {
    const name = `${row.case} over ${row.transport}`;
    const want = row.case === 'exec stdin' ? STREAM_TARGETS.stdinRatio : STREAM_TARGETS.stdoutRatio;
    checks.push({ target: `${name}: throughput >= ${want} x ${RAW_SIDE[row.case]}`, value: `${row.ratio} (${row.shim.mibPerSecond} vs ${row.raw.mibPerSecond} MiB/s)`, pass: row.ratio >= want });
    const cpu = row.case === 'exec stdin' ? STREAM_TARGETS.cpuSecondsPerGiB.stdin : STREAM_TARGETS.cpuSecondsPerGiB.stdout;
    checks.push({ target: `${name}: shim CPU <= ${cpu} s/GiB (cri-dockerd's)`, value: `${row.shim.shimCpuSecondsPerGiB} s/GiB`, pass: row.shim.shimCpuSecondsPerGiB <= cpu });
  }
  return checks;
}

/** The part's rows in the bench table's columns. */
export function renderStreamRows(r: StreamsResult): string[] {
  return r.rows.map(
    (row) =>
      `| streams | ${row.case} ${row.bytes / MiB} MiB over ${row.transport} (MiB/s; shim CPU s/GiB; dockerd CPU s/GiB shim/raw${busy(row) ? '; machine busy cores shim/raw' : ''}) | ${RAW_SIDE[row.case]} | ${row.shim.mibPerSecond}; ${row.shim.shimCpuSecondsPerGiB}; ${row.shim.dockerdCpuSecondsPerGiB}/${row.raw.dockerdCpuSecondsPerGiB}${busy(row)} | | ${row.raw.mibPerSecond} | | ${row.ratio.toFixed(2)} |`,
  );
}


/** '; shim/raw' busy cores, when both sides measured them (results before them have none). */
function busy(row: StreamRow): string {
  return row.shim.machineBusyCores === undefined || row.raw.machineBusyCores === undefined ? '' : `; ${row.shim.machineBusyCores}/${row.raw.machineBusyCores}`;
}
