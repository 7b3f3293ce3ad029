// The lifecycle part of the bench on its own, for working on the lifecycle calls: a fresh shim,
// `--rounds` rounds per side (bench/lifecycle.ts), the p50s and shim/raw ratios; then, unless
// --no-count, three more rounds per side through a second shim behind the request counter, which
// print the Docker requests each call made (and those its events set off), the fewest seen.
// Each round also goes through the grpc-js floor (grpc-floor.ts): its p50 and floor/raw ratio.
// Removes everything it made.
//   node dist/bench/lifecycle-only.js [--rounds=10] [--warmup=2] [--no-count]
import { newTestRun } from '../test/support/cleanup';
import { dockerApi, ensureTestImages, testDockerSocket } from '../test/support/images';
import { startShim, tempDir, type ShimProcess } from '../test/support/shim';
import { startGrpcFloor } from './grpc-floor';
import { LIFECYCLE_CALLS, POD_START, rawRound, runLifecycle, shimRound, START_UP_WALK_DEADLINE_MS, waitForStartUpWalk, type LifecycleCall } from './lifecycle';
import { countBothSides, type RequestCounter } from './request-counter';
import { SHIM_LOG_LEVEL } from './run';
import { ratio, summarize } from './stats';
import { type BenchRun, withCleanUp } from './workload';

function count(argv: readonly string[], name: string, fallback: number): number {
  const text = argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const value = text === undefined ? fallback : Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name}: a whole number, not ${text}`);
  return value;
}

function log(message: string): void {
  process.stderr.write(`[lifecycle ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

type RequestsByCall = Partial<Record<LifecycleCall, Record<string, number>>>;

/** How long no request may come for the requests a call set off to count as done. */
const QUIET_MS = 200;

/** Resolves once the counter saw no request for QUIET_MS (at most 3 s). */
async function quiet(counter: RequestCounter): Promise<void> {
  const deadline = Date.now() + 3_000;
  let seen = counter.seen;
  let since = Date.now();
  while (Date.now() - since < QUIET_MS && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    if (counter.seen !== seen) [seen, since] = [counter.seen, Date.now()];
  }
}

/**
 * One round through `round`, the counter reset before each call and read once the requests it
 * set off (the state cache's inspects after its events too) have stopped coming.
 */
async function countedRound(counter: RequestCounter, round: (record: (call: LifecycleCall) => Promise<void>) => Promise<void>): Promise<RequestsByCall> {
  const byCall: RequestsByCall = {};
  counter.reset();
  await round(async (call) => {
    if (call === POD_START) return;
    await quiet(counter);
    byCall[call] = counter.snapshot();
    counter.reset();
  });
  return byCall;
}

function requestsText(byCall: RequestsByCall): string {
  return LIFECYCLE_CALLS.filter((c) => c !== POD_START)
    .map((c) => {
      const counts = byCall[c] ?? {};
      const total = Object.values(counts).reduce((a, b) => a + b, 0);
      return `  ${c}: ${total} (${Object.entries(counts).map(([e, n]) => `${e} ×${n}`).join(', ')})`;
    })
    .join('\n');
}

/**
 * Rounds counted per side. The daemon is shared: the state cache also inspects the containers
 * other shims (other test runs) make and change meanwhile, which only ever adds requests, so
 * each call's count is its smallest over the rounds.
 */
const COUNTED_ROUNDS = 3;

async function fewest(rounds: number, round: (i: number) => Promise<RequestsByCall>): Promise<RequestsByCall> {
  const best: RequestsByCall = {};
  const total = (counts: Record<string, number> | undefined): number => Object.values(counts ?? {}).reduce((a, b) => a + b, 0);
  for (let i = 0; i < rounds; i++) {
    const counted = await round(i);
    for (const call of LIFECYCLE_CALLS) {
      if (counted[call] && (best[call] === undefined || total(counted[call]) < total(best[call]))) best[call] = counted[call];
    }
  }
  return best;
}

async function countRequests(bench: BenchRun): Promise<void> {
  const { shim, raw } = await countBothSides(
    [`--log-level=${SHIM_LOG_LEVEL}`],
    async (counter, client) => {
      await shimRound(client, bench, 'count-warm', () => undefined);
      return fewest(COUNTED_ROUNDS, (i) => countedRound(counter, (record) => shimRound(client, bench, `count-shim${i}`, record)));
    },
    (counter, docker) => fewest(COUNTED_ROUNDS, (i) => countedRound(counter, (record) => rawRound(docker, bench, `count-raw${i}`, record))),
  );
  process.stdout.write(`Docker requests per call, shim:\n${requestsText(shim)}\nraw:\n${requestsText(raw)}\n`);
}

async function main(argv: readonly string[]): Promise<void> {
  const unknown = argv.filter((a) => !a.startsWith('--rounds=') && !a.startsWith('--warmup=') && a !== '--no-count');
  if (unknown.length > 0) throw new Error(`unknown argument(s): ${unknown.join(' ')}; usage: lifecycle-only.js [--rounds=N] [--warmup=N] [--no-count]`);
  const rounds = count(argv, 'rounds', 10);
  const warmup = count(argv, 'warmup', 2);
  const bench: BenchRun = { run: newTestRun(), logRoot: tempDir('bench-logs') };
  let shim: ShimProcess | undefined;
  await withCleanUp(bench, [], () => shim, log, async () => {
    await ensureTestImages();
    shim = await startShim({ args: [`--log-level=${SHIM_LOG_LEVEL}`] });
    await waitForStartUpWalk(shim.child.pid!, START_UP_WALK_DEADLINE_MS, log);
    log(`${rounds} rounds per side (+${warmup} warm-up)`);
    const floor = await startGrpcFloor(testDockerSocket());
    const samples = await runLifecycle(shim.client, dockerApi(), bench, rounds, warmup, floor).finally(() => floor.stop());
    await shim.stop();
    shim = undefined;
    for (const call of rounds > 0 ? LIFECYCLE_CALLS : []) {
      const s = summarize(samples[call].shim);
      const r = summarize(samples[call].raw);
      const f = samples[call].floor.length > 0 ? summarize(samples[call].floor) : undefined;
      const floorText = f ? `  floor p50 ${f.p50.toFixed(1).padStart(6)} ms  floor/raw ${ratio(f.p50, r.p50)?.toFixed(2) ?? '-'}` : '';
      process.stdout.write(`${call.padEnd(17)} shim p50 ${s.p50.toFixed(1).padStart(6)} ms  raw p50 ${r.p50.toFixed(1).padStart(6)} ms  ratio ${ratio(s.p50, r.p50)?.toFixed(2) ?? '-'}${floorText}\n`);
    }
    if (!argv.includes('--no-count')) await countRequests(bench);
  });
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`lifecycle-only failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
