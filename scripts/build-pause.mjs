// After tsc: compiles the shim's own pause program (src/pause/pause.c) into dist/pause/pause, a
// static binary the shim imports as the default pause image when that cannot be pulled
// (src/pause/local-image.ts). Without a C compiler and a static libc the build goes on without
// it, and says so: the shim then needs a registry (or a preloaded image) for its pause image.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const source = path.join(root, 'src', 'pause', 'pause.c');
const out = path.join(root, 'dist', 'pause', 'pause');
fs.mkdirSync(path.dirname(out), { recursive: true });
try {
  execFileSync('gcc', ['-static', '-O2', '-s', '-Wall', '-Werror', '-o', out, source], { stdio: ['ignore', 'ignore', 'pipe'] });
  process.stdout.write(`pause: ${path.relative(root, out)} (${Math.round(fs.statSync(out).size / 1024)} KiB)\n`);
} catch (err) {
  const why = err.code === 'ENOENT' ? 'gcc is not installed' : String(err.stderr ?? err.message).trim().split('\n').slice(-3).join(' ');
  process.stderr.write(`pause: not built (${why}); install gcc and libc6-dev for the offline pause image\n`);
}
