// After tsc: compiles the shim's own static C programs into dist/<name>/<name>:
//   pause       (src/pause/pause.c) the shim imports it as the default pause image when that
//               cannot be pulled (src/pause/local-image.ts);
//   port-relay  (src/streaming/port-relay.c) dials inside a pod's network namespace for port
//               forward, one per pod forwarded to (src/streaming/pod-relay.ts).
// Static, so each runs anywhere (the pause program in an image of its own). Without a C
// compiler and a static libc the build goes on without them, and says so: the shim then needs
// a registry (or a preloaded image) for its pause image, and cannot port-forward into pods.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PROGRAMS = { pause: 'src/pause/pause.c', 'port-relay': 'src/streaming/port-relay.c' };
for (const [name, source] of Object.entries(PROGRAMS)) {
  const out = path.join(root, 'dist', name, name);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  try {
    execFileSync('gcc', ['-static', '-O2', '-s', '-Wall', '-Wextra', '-Werror', '-o', out, path.join(root, source)], { stdio: ['ignore', 'ignore', 'pipe'] });
    process.stdout.write(`${name}: ${path.relative(root, out)} (${Math.round(fs.statSync(out).size / 1024)} KiB)\n`);
  } catch (err) {
    const why = err.code === 'ENOENT' ? 'gcc is not installed' : String(err.stderr ?? err.message).trim().split('\n').slice(-3).join(' ');
    process.stderr.write(`${name}: not built (${why}); install gcc and libc6-dev\n`);
  }
}
