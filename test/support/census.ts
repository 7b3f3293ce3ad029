// Reading a shim's run census (./run-census.ts, which rides into the shim through NODE_OPTIONS):
// what ran in a window, by the kind of resource and the line that made it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { waitFor } from './poll';

/** One kind of callback the census counted: the resource type, where the program made it, how often it ran. */
export interface CensusEntry {
  type: string;
  site: string;
  /** A timeout or an interval ran it, and no outside wake-up armed it (./run-census.ts). */
  timer: boolean;
  runs: number;
}

/** The environment that loads the census into a shim started with it, writing to `file`. */
export function censusEnv(file: string): NodeJS.ProcessEnv {
  return { NODE_OPTIONS: `--require ${path.join(__dirname, 'run-census.js')}`, RUN_CENSUS_FILE: file };
}

/** Starts the count in `shim` (loaded with censusEnv); the returned function ends it and reads what ran. */
export function startCensus(shim: ChildProcess, file: string): () => Promise<CensusEntry[]> {
  fs.rmSync(file, { force: true });
  shim.kill('SIGUSR2');
  return async () => {
    shim.kill('SIGUSR2');
    // The shim writes it from its own event loop, whole (renamed into place): polled.
    const text = await waitFor(
      'the shim to write its run census',
      () => {
        try {
          return fs.readFileSync(file, 'utf8');
        } catch {
          return undefined;
        }
      },
      { timeoutMs: 10_000 },
    );
    fs.rmSync(file, { force: true });
    return JSON.parse(text) as CensusEntry[];
  };
}

/** The census's timer-driven runs: what an idle shim should not have. */
export function timerRuns(census: readonly CensusEntry[]): number {
  return census.filter((e) => e.timer).reduce((sum, e) => sum + e.runs, 0);
}

/** One line naming what ran: "3x Timeout (timer) made at ...; ...". */
export function describeCensus(census: readonly CensusEntry[]): string {
  return census.length === 0 ? 'nothing' : census.map((e) => `${e.runs}x ${e.type}${e.timer ? ' (timer)' : ''} made at ${e.site}`).join('; ');
}
