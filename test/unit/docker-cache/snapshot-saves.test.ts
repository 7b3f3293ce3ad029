// When the state cache saves its container snapshot (src/docker-cache/state-cache.ts): once,
// SNAPSHOT_INTERVAL_MS after a change, and no timer at all while nothing changes (it woke every
// 60 s for nothing). Timers are mocked: an idle hour is ticked at once.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { ContainerSnapshotFile } from '../../../src/docker-cache/container-snapshot';
import { DockerStateCache, SNAPSHOT_INTERVAL_MS } from '../../../src/docker-cache/state-cache';
import type { ContainerInspect } from '../../../src/docker/types';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker } from '../../support/fake-docker';
import { inspectDoc, runningState } from '../../support/fixtures/docker-container';

const LABELS = { 'io.kubernetes.docker.type': 'container' };
const ID_A = 'a'.repeat(64);
const ID_B = 'b'.repeat(64);

function doc(id: string): ContainerInspect {
  return inspectDoc({ Id: id, Name: `/k8s_c_${id.slice(0, 4)}_ns_uid_0`, State: runningState(), Config: { Labels: LABELS } });
}

/** Polls without a timer (they are mocked): each turn lets pending I/O and promise jobs run. */
async function until(what: string, probe: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (probe()) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  throw new Error(`never: ${what}`);
}

describe('container snapshot saves', () => {
  let cache: DockerStateCache | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await cache?.stop();
    cache = undefined;
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('arms no save while nothing changes; a change arms one, SNAPSHOT_INTERVAL_MS later, which saves it and tells its listeners', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-snapshot-'));
    const file = path.join(dir, 'container-snapshot.json');
    const docker = new FakeDocker();
    docker.addImage('busybox', { Id: 'sha256:1111' });
    docker.containers.set(ID_A, doc(ID_A));
    const saved = (): string[] => (fs.existsSync(file) ? (new ContainerSnapshotFile(file, silentLogger()).load()?.containers.map((c) => c.Id) ?? []) : []);
    cache = new DockerStateCache(docker, silentLogger(), { initialMs: 5, maxMs: 20, subscribeTimeoutMs: 1_000 }, undefined, new ContainerSnapshotFile(file, silentLogger()));
    await cache.start();
    assert.equal(cache.snapshotSaveArmed, true, 'the first sync stored A: a save is due');
    let told = 0;
    cache.listen({ snapshotSaved: () => told++ });
    t.mock.timers.tick(SNAPSHOT_INTERVAL_MS);
    await until('A saved', () => saved().includes(ID_A));
    await until('the save told', () => told === 1);
    assert.equal(cache.snapshotSaveArmed, false, 'saved, and nothing changed since: no timer');
    t.mock.timers.tick(3_600_000);
    assert.equal(cache.snapshotSaveArmed, false, 'an idle hour arms nothing');

    docker.containers.set(ID_B, doc(ID_B));
    docker.emit('create', ID_B, LABELS);
    await until('B held', () => cache!.containers.size === 2);
    assert.equal(cache.snapshotSaveArmed, true);
    assert.deepEqual(saved(), [ID_A], 'not saved at once');
    t.mock.timers.tick(SNAPSHOT_INTERVAL_MS);
    await until('B saved', () => saved().includes(ID_B));
    assert.equal(cache.snapshotSaveArmed, false);
    await until('the second save told', () => told === 2);
  });
});
