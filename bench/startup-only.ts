// The start-up part of the bench on its own, for working on start-up time: populates the node
// through a shim (pods of a pause and one sleeping container each), stops that shim, then execs
// this build (and `--baseline=`, taking turns) on its state directory as run.ts's part 5 does:
// with a service's environment, and also with the bench's own when that holds variables Node
// acts on at boot.
// Prints the samples and their p50; removes everything it made.
//   node dist/bench/startup-only.js [--containers=200] [--runs=20] [--baseline=PATH/dist/src/main.js]
import * as path from 'node:path';
import { newTestRun, removePaths, removeTestContainers } from '../test/support/cleanup';
import { ensureTestImages } from '../test/support/images';
import { MAIN_JS, startShim, tempDir } from '../test/support/shim';
import { populate, type PopulatedPod } from './reads';
import { measureStartup, startupBuilds } from './startup';
import { summarize } from './stats';
import type { BenchRun } from './workload';

function option(argv: readonly string[], name: string): string | undefined {
  return argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

function count(argv: readonly string[], name: string, fallback: number): number {
  const text = option(argv, name);
  const value = text === undefined ? fallback : Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name}: a whole number, not ${text}`);
  return value;
}

async function main(argv: readonly string[]): Promise<void> {
  const known = ['--containers=', '--runs=', '--baseline='];
  const unknown = argv.filter((a) => !known.some((k) => a.startsWith(k)));
  if (unknown.length > 0) throw new Error(`unknown argument(s): ${unknown.join(' ')}; usage: startup-only.js [--containers=N] [--runs=N] [--baseline=MAIN_JS]`);
  const containers = count(argv, 'containers', 200);
  const runs = count(argv, 'runs', 20);
  const baseline = option(argv, 'baseline');
  const builds = startupBuilds(MAIN_JS, baseline === undefined ? undefined : path.resolve(baseline)).all;

  const bench: BenchRun = { run: newTestRun(), logRoot: tempDir('bench-logs') };
  const rootDir = tempDir('bench-root');
  try {
    await ensureTestImages();
    const shim = await startShim({ args: ['--log-level=info'], rootDir });
    const pods: PopulatedPod[] = [];
    try {
      await populate(shim.client, bench, pods, containers, 4);
    } finally {
      await shim.stop();
    }
    const samples = await measureStartup(builds, rootDir, {
      runs,
      warmup: 1,
      logLevel: 'info',
      progress: (m) => process.stderr.write(`${m}\n`),
    });
    for (const [label, list] of samples) {
      const version = summarize(list.map((s) => s.versionMs));
      const listing = summarize(list.map((s) => s.listMs));
      process.stdout.write(
        `${label}: ${pods.length * 2} containers, ${runs} runs: first Version p50 ${version.p50.toFixed(0)} ms (p95 ${version.p95.toFixed(0)}), first ListContainers p50 ${listing.p50.toFixed(0)} ms (p95 ${listing.p95.toFixed(0)})\n`,
      );
    }
  } finally {
    await removeTestContainers({ run: bench.run });
    removePaths(bench.logRoot, rootDir);
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`startup-only failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
