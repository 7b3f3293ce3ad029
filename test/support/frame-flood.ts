// Runs ./frame-flooder.ts in a child process (see there) and follows what it reports.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import type { FloodEvent, FloodPlan } from './frame-flooder';

export interface FrameFlood {
  /** Resolves once every connection is upgraded and the flood starts. */
  ready: Promise<void>;
  /** Resolves after the flood, with the bytes written per connection. */
  done: Promise<number[]>;
  /** Connections the shim ended so far: index → GOAWAY status (undefined: closed without one). */
  readonly closed: Map<number, number | undefined>;
  /** Ends the child's connections and waits for it to exit. */
  stop(): Promise<void>;
}

export function startFrameFlood(plan: FloodPlan): FrameFlood {
  const child = spawn(process.execPath, [path.join(__dirname, 'frame-flooder.js'), JSON.stringify(plan)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const failed = exited.then(() => {
    throw new Error('the flooder exited early');
  });
  failed.catch(() => undefined);
  const closed = new Map<number, number | undefined>();
  let onReady!: () => void;
  let onDone!: (sent: number[]) => void;
  const ready = new Promise<void>((r) => (onReady = r));
  const done = new Promise<number[]>((r) => (onDone = r));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const e = JSON.parse(line) as FloodEvent;
    if (e.event === 'ready') onReady();
    else if (e.event === 'done') onDone(e.sent);
    else closed.set(e.index, e.status);
  });
  return {
    ready: Promise.race([ready, failed]),
    done: Promise.race([done, failed]),
    closed,
    async stop() {
      child.stdin!.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Latencies of `call` run one after another until `stop` resolves; a call still running then counts as long as it has taken. */
export async function latenciesUntil(call: () => Promise<unknown>, stop: Promise<unknown>): Promise<number[]> {
  let stopped = false;
  void stop.then(() => (stopped = true), () => (stopped = true));
  const latencies: number[] = [];
  while (!stopped) {
    const start = performance.now();
    const finished = await Promise.race([call().then(() => true), stop.then(() => false, () => false)]);
    latencies.push(performance.now() - start);
    if (!finished) break;
  }
  return latencies;
}

export interface LatencySummary {
  calls: number;
  p50: number;
  p99: number;
  max: number;
}

export function summarize(latencies: readonly number[]): LatencySummary {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { calls: sorted.length, p50: Math.round(at(0.5)), p99: Math.round(at(0.99)), max: Math.round(sorted[sorted.length - 1] ?? NaN) };
}
