#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072 node
// The executable. glibc's malloc settings (read as the process starts, hence set by the shebang;
// the packaged unit sets the same, test/unit/launcher.test.ts holds them equal):
// - at most two arenas (MALLOC_ARENA_MAX): with one per thread that allocates (libuv's workers,
//   V8's), what a burst freed stays spread over arenas that are not given back. Measured with
//   bench/idle.ts at 50 pods, RSS 60 s after 10,000 fuzzed calls 88 -> 78 MiB, after 1 GiB of
//   exec stdout 101 -> 77 MiB.
// - the mmap and trim thresholds fixed at glibc's own defaults (128 KiB): set, they no longer
//   grow. glibc raises the mmap threshold to the size of each large block freed (up to 32 MiB),
//   so after the first burst large blocks (list answers, the code cache read at start) came from
//   the heap, and the heap's middle never goes back to the system. Fixed, each such block is its
//   own mapping and goes back when freed. Measured with bench/idle.ts at 50 pods, medians of
//   three runs on a shared machine (main: two, and the lead's last full run): RSS 60 s after
//   10,000 fuzzed calls 82.2 -> 75.9 MiB, after 1,000 containers listed 86.7 -> 77.9, after
//   1 GiB of exec stdout 81.9 -> 79.1, idle 78.0 -> 72.5; malloc's heap after the first two
//   16 -> 7 MiB. No cost seen in CPU (list-cpu, the bursts' own CPU). A stream's 64 KiB read
//   buffers stay under the threshold: a 64 KiB one gave them back too, but cost ~0.5 s of CPU
//   per GiB streamed (a fresh mapping per buffer) and left no lower RSS over the three bursts.
// None of them is a V8 flag.
//
// Where an idle shim's RSS lies (50 pods, ~70 MiB; bench/idle.ts breaks it down by mapping): node's
// binary 40.5 MiB (code 23: V8, OpenSSL, and 3.7 of TurboFan that optimized code needs;
// read-only data 17.4: Node's own modules' sources and code caches ~10, the dynamic symbols the
// loader reads at start 5.8, ICU's data ~1 of its 33), libraries 3.5, V8's heap ~18-22 (live
// after a full collection ~20: compiled code 5.7, strings 4.9 of which this bundle's source
// 1.85), malloc's heap ~5. A bare `node -e` idles at ~40 MiB: 30 of them the binary's.
// A heap snapshot of that idle shim: 15.5 MiB live, compiled code 5.4, strings 3.6 (1.85 the
// bundle's source, no other string over 50 KiB), shapes and objects ~5; no cache or kept answer
// stands out. The bundle's largest parts: grpc-js 377 KiB, yaml 158, protobufjs 141, the shim's
// own ~600. V8 flags set at run time (v8.setFlagsFromString, once loaded) spare the start-up
// cost, but the one found to lower the idle RSS, --max-opt=0, does so by never touching
// TurboFan (3.7 MiB of the binary's pages) and ran a hot loop 3.5-5x slower: not taken.
//
// It runs with Node's default flags on purpose: any V8 flag (a smaller young generation, say)
// changes V8's flag hash, and then V8 refuses the code cache Node ships for its own built-in
// modules, which costs ~40 ms of every start here compiling http2, tls and the rest
// again; a small young generation also made the stats and metrics calls spend most of their
// CPU in the garbage collector (bench/README.md has the figures).
//
// While a byte stream is open the shim sets one V8 flag at run time (util/heap-growth.ts),
// when Node's built-in modules and the bundle have taken their code caches.
//
// After a crash kubelet keeps calling, so start-up time counts. The build bundles cli.ts and
// everything it loads into one file (scripts/bundle.mjs), which spares Node resolving and
// reading several hundred module files, and stores V8's compiled code for it beside it; here
// the bundle is compiled with that code cache. Without a bundle (tsc alone), cli.js is
// required as usual.
//
// The single executable (util/single-executable.ts) carries the bundle and its cache instead.
//
// Docker's version and info are asked for first, so that Docker works on them while the shim
// loads (docker/early-answers.ts).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { askDockerEarly } from './docker/early-answers';
import { compileBundle, compileBundleSource } from './launcher';
import { BUNDLE_FILE, CODE_CACHE_FILE } from './util/single-executable';
import { assetBytes, SEA_ASSETS, singleExecutable } from './util/single-executable';

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

const argv = process.argv.slice(2);
const early = askDockerEarly(argv, process.env);
loadCli().runCli(argv, early);
