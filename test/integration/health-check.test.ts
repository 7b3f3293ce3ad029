// The healthcheck probe as the images run it: the compiled command against a real shim's socket
// (healthy, exit 0) and against a socket nobody serves (unhealthy, exit 1), and its flag errors.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startShim, tempDir, type ShimProcess } from '../support/shim';
import { removePaths } from '../support/cleanup';

const PROBE = path.resolve(__dirname, '../../src/tools/health-check.js');

function probe(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [PROBE, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('health-check probe', () => {
  let shim: ShimProcess;
  const empty = tempDir('health');
  before(async () => {
    shim = await startShim();
  });
  after(async () => {
    await shim?.stop();
    removePaths(empty);
  });

  it('reports healthy with the conditions of a running shim', () => {
    const r = probe('--endpoint', `unix://${shim.socket}`);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^healthy: RuntimeReady=true NetworkReady=true\n$/);
  });

  it('reports unhealthy, with the reason, where no shim listens', () => {
    const r = probe('--endpoint', `unix://${path.join(empty, 'none.sock')}`, '--timeout=2s');
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^unhealthy: Status over unix:\/\/.*none\.sock failed: /);
  });

  it('exits 2 on a bad flag', () => {
    const r = probe('--timeout=soon');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^health-check: /);
  });
});
