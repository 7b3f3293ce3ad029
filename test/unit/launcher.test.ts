import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { compileBundle } from '../../src/launcher';
import { BUNDLE_FILE, CODE_CACHE_FILE } from '../../src/util/single-executable';
import { tempDir } from '../support/temp';

const LAUNCHER = path.resolve(__dirname, '../../src/launcher.js');

/**
 * Whether V8 refuses `cache` for `bundle`, asked of a fresh Node: within one process V8 keeps
 * what it compiled and would not look at the cache at all.
 */
function cacheRejectedInFreshNode(bundle: string, cache: string, nodeFlags: string[] = []): string {
  const check = `process.stdout.write(String(require(${JSON.stringify(LAUNCHER)}).compileBundle(${JSON.stringify(bundle)}, ${JSON.stringify(cache)}).cacheRejected))`;
  const res = spawnSync(process.execPath, [...nodeFlags, '-e', check], { encoding: 'utf8' });
  assert.equal(res.status, 0, res.stderr);
  return res.stdout;
}

describe('launcher: the bundle with its code cache', () => {
  const work = tempDir('launcher');
  after(() => fs.rmSync(work, { recursive: true, force: true }));

  it('runs a bundle as a main module; its cache is taken, a bad one refused', () => {
    const bundle = path.join(work, 'b.js');
    const cache = path.join(work, 'b.cache');
    fs.writeFileSync(bundle, '#!/usr/bin/env node\nglobalThis.launcherProbe = { dir: __dirname, file: __filename, req: typeof require("node:path").join };\nexports.answer = 42;\n');
    const probe = globalThis as { launcherProbe?: unknown };

    const compiled = compileBundle(bundle, cache);
    assert.equal(compiled.cacheRejected, undefined, 'no cache was offered');
    assert.deepEqual(compiled.run(), { answer: 42 }, 'run gives the exports');
    assert.deepEqual(probe.launcherProbe, { dir: work, file: bundle, req: 'function' });
    delete probe.launcherProbe;
    fs.writeFileSync(cache, compiled.codeCache());
    assert.equal(cacheRejectedInFreshNode(bundle, cache), 'false');
    fs.writeFileSync(cache, 'not a code cache');
    assert.equal(cacheRejectedInFreshNode(bundle, cache), 'true');
  });

  it('the build’s cache is accepted by Node run with main.js’s shebang flags', () => {
    const dist = path.resolve(__dirname, '../../src');
    const bundle = path.join(dist, BUNDLE_FILE);
    const cache = path.join(dist, CODE_CACHE_FILE);
    assert.ok(fs.existsSync(bundle) && fs.existsSync(cache), 'npm run build makes both');
    const shebang = fs.readFileSync(path.join(dist, 'main.js'), 'utf8').split('\n', 1)[0]!;
    const flags = shebang.replace(/^#!\/usr\/bin\/env -S (?:[A-Z_]+=\S*\s+)*node\s*/, '').split(/\s+/).filter((f) => f !== '');
    assert.equal(cacheRejectedInFreshNode(bundle, cache, flags), 'false');
  });

  it('the packaged unit gives the executable the shebang’s malloc settings, the fixed mmap threshold among them', () => {
    const root = path.resolve(__dirname, '../../..');
    const shebang = fs.readFileSync(path.join(root, 'src/main.ts'), 'utf8').split('\n', 1)[0]!;
    const fromShebang = /^#!\/usr\/bin\/env -S ((?:[A-Z_]+=\S*\s+)*)node/.exec(shebang)?.[1]?.trim().split(/\s+/) ?? [];
    const unit = fs.readFileSync(path.join(root, 'packaging/systemd/cri-docker-shim.service'), 'utf8');
    const fromUnit = unit
      .split('\n')
      .filter((l) => l.startsWith('Environment='))
      .flatMap((l) => l.slice('Environment='.length).trim().split(/\s+/));
    assert.deepEqual(fromUnit.sort(), [...fromShebang].sort());
    assert.ok(fromShebang.includes('MALLOC_MMAP_THRESHOLD_=131072'), shebang);
  });
});
