// After tsc: bundles dist/src/cli.js and everything it loads into dist/src/cli.bundle.js, then
// makes V8's code cache for it (dist/src/cli.bundle.cache) by running a start-up of it under the
// same Node flags as main.js's shebang (code-cache.mjs). main.js runs the bundle with that cache,
// which V8 takes only from the Node that made it: so the project's makes it (project-node.mjs).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { makeBuildCodeCache } from './code-cache.mjs';
import { projectNode } from './project-node.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist', 'src');
const bundle = path.join(dist, 'cli.bundle.js');
const cache = path.join(dist, 'cli.bundle.cache');

await build({
  entryPoints: [path.join(dist, 'cli.js')],
  outfile: bundle,
  bundle: true,
  platform: 'node',
  target: 'node24',
  format: 'cjs',
  alias: {
    ssh2: path.join(root, 'scripts', 'ssh2-unsupported.cjs'),
    // ws's optional native masking, in TypeScript (src/streaming/ws-mask.ts).
    bufferutil: path.join(dist, 'streaming', 'ws-mask.js'),
  },
  // Less text for V8 to read and hold (2.5 -> 1.6 MiB); identifiers are left alone, so names
  // in stack traces stay as written.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});

try {
  // With main.js's shebang flags, so that V8 accepts the cache when main.js runs.
  await makeBuildCodeCache(dist, projectNode());
} catch (err) {
  process.stderr.write(`bundle: making the code cache failed: ${err.message}\n`);
  process.exit(1);
}
const size = (file) => `${(fs.statSync(file).size / 1024 / 1024).toFixed(1)} MiB`;
process.stdout.write(`bundle: ${path.relative(root, bundle)} (${size(bundle)}), code cache ${size(cache)}\n`);
