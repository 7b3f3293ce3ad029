// The static C programs `npm run build` compiles (scripts/build-programs.mjs) into
// dist/<name>/<name> of the package. The package root is the nearest folder above the running
// code with a package.json, since that code runs both from the bundle (dist/src) and from tsc's
// output (dist/src/<folder>).
import * as fs from 'node:fs';
import * as path from 'node:path';

/** dist/<name>/<name> of the package `from` (a folder of its code) belongs to, when built. */
export function builtProgram(name: string, from: string): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) {
      const program = path.join(dir, 'dist', name, name);
      return fs.existsSync(program) ? program : undefined;
    }
    if (path.dirname(dir) === dir) return undefined;
  }
}
