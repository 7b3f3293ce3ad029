#!/usr/bin/env -S node --max-semi-space-size=1
// The executable. The shebang keeps V8's young generation small: a long-running daemon that
// answers small calls gains nothing from a large one, and it costs ~8 MB idle and ~20 MB under
// load. V8 reads the flag only at start-up, so run this file itself (setup.sh and the tests do).
//
// After a crash kubelet keeps calling, so start-up time counts. The build bundles cli.ts and
// everything it loads into one file (scripts/bundle.mjs), which spares Node resolving and
// reading several hundred module files, and stores V8's compiled code for it beside it; here
// the bundle is compiled with that code cache. Without a bundle (tsc alone), cli.js is
// required as usual.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { compileBundle, BUNDLE_FILE, CODE_CACHE_FILE } from './launcher';

const bundle = path.join(__dirname, BUNDLE_FILE);
if (fs.existsSync(bundle)) {
  compileBundle(bundle, path.join(__dirname, CODE_CACHE_FILE)).run();
} else {
  require('./cli');
}
