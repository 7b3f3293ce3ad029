// Cgroup files from a fixture directory as the reader hands them over: text by file name, a
// file that is not there (or is left out on purpose) undefined.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CgroupFiles } from '../../src/cgroups/parse';

/** The v1 and v2 files of test/fixtures/pod-metrics (see test/unit/cgroups/figures.test.ts). */
export const FIGURE_FIXTURES = path.resolve(__dirname, '../../../test/fixtures/pod-metrics');

/** `names` in `dir` (all of its files without), but those in `without`. */
export function filesIn(dir: string, names?: readonly string[], without: readonly string[] = []): CgroupFiles {
  const out: Record<string, string | undefined> = {};
  for (const name of names ?? fs.readdirSync(dir)) {
    const p = path.join(dir, name);
    out[name] = !without.includes(name) && fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : undefined;
  }
  return out;
}
