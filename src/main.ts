#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072 node
// The executable. glibc's malloc settings (read as the process starts, hence set by the shebang;
// the packaged unit sets the same, test/unit/launcher.test.ts holds them equal):
// - at most two arenas (MALLOC_ARENA_MAX): with one per thread that allocates (libuv's workers,
//   V8's), what a burst freed stays spread over arenas that are not given back. Measured with
//   bench/idle.ts at 50 pods, RSS 60 s after 10,000 fuzzed calls 88 -> 78 MiB, after 1 GiB of
//   exec stdout 101 -> 77 MiB.
// - the mmap and trim thresholds fixed at glibc's own defaults (128 KiB): set, they no longer
//   grow. glibc raises the mmap threshold to the size of each large block freed (up to 32 MiB),
//   so after the first burst blocks of a list answer or a stream's buffers came from the heap,
//   and the heap's middle never goes back to the system. Fixed, each such block is its own
//   mapping and goes back when freed. Measured with bench/idle.ts at 50 pods (two runs each,
//   a shared machine): malloc's heap 60 s after 10,000 fuzzed calls 16.2 -> 7.2 MiB, after a
//   list of 1,000 containers 16.4 -> 6.7 MiB, idle 8.2 -> 5.5 MiB; the RSS 60 s after those
//   bursts 82-83 -> 74-77 and 80-88 -> 78 MiB, idle 78-81 -> 73 MiB.
// None of them is a V8 flag.
//
// It runs with Node's default flags on purpose: any V8 flag (a smaller young generation, say)
// changes V8's flag hash, and then V8 refuses the code cache Node ships for its own built-in
// modules, which costs ~40 ms of every start here compiling http2, tls and the rest
// again; a small young generation also made the stats and metrics calls spend most of their
// CPU in the garbage collector (bench/README.md has the figures).
//
// After a crash kubelet keeps calling, so start-up time counts. The build bundles cli.ts and
// everything it loads into one file (scripts/bundle.mjs), which spares Node resolving and
// reading several hundred module files, and stores V8's compiled code for it beside it; here
// the bundle is compiled with that code cache. Without a bundle (tsc alone), cli.js is
// required as usual.
//
// The single executable (util/single-executable.ts) carries the bundle and its cache instead,
// and is also the port relay when started as one.
//
// Docker's version and info are asked for first, so that Docker works on them while the shim
// loads (docker/early-answers.ts).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { askDockerEarly } from './docker/early-answers';
import { compileBundle, compileBundleSource } from './launcher';
import { BUNDLE_FILE, CODE_CACHE_FILE } from './util/single-executable';
import { assetBytes, PORT_RELAY_ENV, SEA_ASSETS, singleExecutable } from './util/single-executable';

type Cli = typeof import('./cli');

function loadCli(): Cli {
  const sea = singleExecutable();
  if (sea) {
    // Named as if beside the executable: only stack traces and the bundle's require() of Node's
    // own modules see the name.
    const filename = path.join(path.dirname(process.execPath), BUNDLE_FILE);
    return compileBundleSource(sea.getAsset(SEA_ASSETS.bundle, 'utf8'), assetBytes(sea, SEA_ASSETS.codeCache), filename).run() as Cli;
  }
  const bundle = path.join(__dirname, BUNDLE_FILE);
  return (fs.existsSync(bundle) ? compileBundle(bundle, path.join(__dirname, CODE_CACHE_FILE)).run() : require('./cli')) as Cli;
}

if (process.env[PORT_RELAY_ENV] === '1' && singleExecutable()) {
  (require('./streaming/port-relay') as typeof import('./streaming/port-relay')).runPortRelay();
} else {
  const argv = process.argv.slice(2);
  const early = askDockerEarly(argv, process.env);
  loadCli().runCli(argv, early);
}
