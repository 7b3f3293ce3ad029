#!/usr/bin/env -S node
// The executable. It runs with Node's default flags on purpose: any V8 flag (a smaller young
// generation, say) changes V8's flag hash, and then V8 refuses the code cache Node ships for its
// own built-in modules, which costs ~40 ms of every start here compiling http2, tls and the rest
// again; a small young generation also made the stats and metrics calls spend most of their
// CPU in the garbage collector (bench/README.md has the figures).
//
// After a crash kubelet keeps calling, so start-up time counts. The build bundles cli.ts and
// everything it loads into one file (scripts/bundle.mjs), which spares Node resolving and
// reading several hundred module files, and stores V8's compiled code for it beside it; here
// the bundle is compiled with that code cache. Without a bundle (tsc alone), cli.js is
// required as usual.
//
// Docker's version and info are asked for first, so that Docker works on them while the shim
// loads (docker/early-answers.ts).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { askDockerEarly } from './docker/early-answers';
import { compileBundle, BUNDLE_FILE, CODE_CACHE_FILE } from './launcher';

const argv = process.argv.slice(2);
const early = askDockerEarly(argv, process.env);
const bundle = path.join(__dirname, BUNDLE_FILE);
const cli = (fs.existsSync(bundle) ? compileBundle(bundle, path.join(__dirname, CODE_CACHE_FILE)).run() : require('./cli')) as typeof import('./cli');
cli.runCli(argv, early);
