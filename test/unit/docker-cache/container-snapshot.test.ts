// The saved container documents a restarted shim starts from (src/docker-cache/container-snapshot.ts):
// the file's format and what a corrupt one does, which saved documents the first sync keeps
// (those Docker's list shows unchanged, listedAsHeld) and that it inspects them again after.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { ContainerSnapshotFile, decodeContainerSnapshot, encodeContainerSnapshot } from '../../../src/docker-cache/container-snapshot';
import { DockerStateCache } from '../../../src/docker-cache/state-cache';
import { listedAsHeld, summaryFromInspect } from '../../../src/docker-cache/summary';
import type { ContainerInspect } from '../../../src/docker/types';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker } from '../../support/fake-docker';
import { waitFor } from '../../support/poll';
import { recordingLogger } from '../../support/recording-logger';
import { inspectDoc, runningState } from '../../support/fixtures/docker-container';

const LABELS = { 'io.kubernetes.docker.type': 'container' };
const ID_A = 'a'.repeat(64);
const ID_B = 'b'.repeat(64);
const ID_C = 'c'.repeat(64);

function doc(id: string, state = runningState()): ContainerInspect {
  return inspectDoc({ Id: id, Name: `/k8s_c_${id.slice(0, 4)}_ns_uid_0`, State: state, Config: { Labels: LABELS } });
}

describe('container snapshot', () => {
  const dirs: string[] = [];
  let cache: DockerStateCache | undefined;
  afterEach(async () => {
    await cache?.stop();
    cache = undefined;
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  const tempFile = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-snapshot-'));
    dirs.push(dir);
    return path.join(dir, 'container-snapshot.json');
  };

  it('round-trips container documents, and leaves out entries that are not', () => {
    const text = encodeContainerSnapshot([doc(ID_A), doc(ID_B)], new Date('2026-11-25T00:00:00Z'));
    assert.deepEqual(decodeContainerSnapshot(text).containers.map((c) => c.Id), [ID_A, ID_B]);
    const mixed = JSON.parse(text) as { containers: unknown[] };
    mixed.containers.push(null, { Id: '../../etc' }, { Id: ID_C, State: {} }, 7);
    assert.deepEqual(decodeContainerSnapshot(JSON.stringify(mixed)), { containers: [doc(ID_A), doc(ID_B)], skipped: 4 });
    assert.throws(() => decodeContainerSnapshot('{"format":"other","containers":[]}'), /not a cri-docker-shim.containers\/v1 document/);
    assert.throws(() => decodeContainerSnapshot('{"format":'));
  });

  it('loads nothing, and says why, from a corrupt file or a symlink; nothing and no word when there is none', async () => {
    const file = tempFile();
    const rec = recordingLogger();
    const snapshot = new ContainerSnapshotFile(file, rec.log);
    assert.deepEqual(snapshot.load(), []);
    assert.equal(rec.lines().length, 0, 'a first start is not worth a warning');
    fs.writeFileSync(file, '{"format":"cri-docker-shim.containers/v1","containers":[{"Id"');
    assert.deepEqual(snapshot.load(), []);
    assert.match(rec.lines().at(-1)!.msg, /container snapshot corrupt/);
    fs.rmSync(file);
    const elsewhere = tempFile();
    await new ContainerSnapshotFile(elsewhere, silentLogger()).save([doc(ID_A)]);
    fs.symlinkSync(elsewhere, file);
    assert.deepEqual(snapshot.load(), []);
    assert.match(rec.lines().at(-1)!.msg, /container snapshot unreadable/);
    assert.equal(fs.statSync(elsewhere).mode & 0o777, 0o600, 'readable by its owner only');
  });

  it('holds a saved document only while Docker\'s list shows the container as it says', () => {
    const now = Date.parse('2026-11-25T10:00:00Z');
    const held = doc(ID_A, runningState('2026-11-25T09:00:00Z'));
    const listed = (c: ContainerInspect) => summaryFromInspect(c, 'busybox', now);
    assert.equal(listedAsHeld(held, listed(held), now), true);
    assert.equal(listedAsHeld(held, listed(doc(ID_A, runningState('2026-11-25T09:59:50Z'))), now), false, 'restarted meanwhile');
    const exited = (code: number) => doc(ID_A, { Status: 'exited', Running: false, ExitCode: code, StartedAt: '2026-11-25T09:00:00Z', FinishedAt: '2026-11-25T09:30:00Z' });
    assert.equal(listedAsHeld(held, listed(exited(0)), now), false, 'exited meanwhile');
    assert.equal(listedAsHeld(exited(0), listed(exited(0)), now), true);
    assert.equal(listedAsHeld(exited(0), listed(exited(137)), now), false, 'another exit code');
    assert.equal(listedAsHeld(held, { ...listed(held), Names: ['/renamed'] }, now), false, 'renamed');
    assert.equal(listedAsHeld(held, listed(doc(ID_B, runningState('2026-11-25T09:00:00Z'))), now), false, 'another container');
  });

  it('starts the first sync from the saved documents Docker still lists unchanged, inspects the rest, then confirms the kept ones', async () => {
    const file = tempFile();
    const docker = new FakeDocker();
    docker.addImage('busybox', { Id: 'sha256:1111' });
    const unchanged = doc(ID_A);
    const died = doc(ID_B);
    for (const c of [unchanged, died, doc(ID_C)]) docker.containers.set(c.Id, c);
    await new ContainerSnapshotFile(file, silentLogger()).save([unchanged, died]);
    docker.containers.set(ID_B, doc(ID_B, { Status: 'exited', Running: false, ExitCode: 1, StartedAt: died.State.StartedAt, FinishedAt: '2026-11-25T09:30:00Z' }));
    // A's inspect is held until the test lets it go: the cache is seen answering before it.
    const confirmation = docker.hold('inspectContainer', (id) => id === ID_A);

    const rec = recordingLogger();
    cache = new DockerStateCache(docker, rec.log, { initialMs: 5, maxMs: 20, subscribeTimeoutMs: 1_000 }, undefined, new ContainerSnapshotFile(file, rec.log));
    await cache.start();
    assert.equal(cache.synced, true);
    assert.deepEqual([...cache.containers.values()].map((c) => [c.Id, c.State.Status]).sort(), [[ID_A, 'running'], [ID_B, 'exited'], [ID_C, 'running']]);
    assert.equal(rec.lines().find((l) => l.msg === 'state cache synced with Docker')?.fromSnapshot, 1);
    const inspected = (): unknown[] => docker.argsOf('inspectContainer').map((a) => a[0]);
    assert.deepEqual(inspected().filter((id) => id !== ID_A).sort(), [ID_B, ID_C], 'B (changed) and C (not saved) at the sync');
    confirmation.release();
    await waitFor('A to be inspected again, to confirm', () => inspected().includes(ID_A) && rec.lines().some((l) => l.msg === 'containers from the snapshot inspected again'));
  });

  it('saves what it holds at a stop, and nothing it cannot vouch for', async () => {
    const file = tempFile();
    const docker = new FakeDocker();
    docker.addImage('busybox', { Id: 'sha256:1111' });
    docker.containers.set(ID_A, doc(ID_A));
    const started = new DockerStateCache(docker, silentLogger(), undefined, undefined, new ContainerSnapshotFile(file, silentLogger()));
    await started.start();
    await started.stop();
    assert.deepEqual(new ContainerSnapshotFile(file, silentLogger()).load().map((c) => c.Id), [ID_A]);
    fs.rmSync(file);
    const never = new DockerStateCache(docker, silentLogger(), undefined, undefined, new ContainerSnapshotFile(file, silentLogger()));
    docker.fail('*', { error: () => new Error('Docker is away'), times: Infinity });
    void never.start();
    await never.stop();
    assert.equal(fs.existsSync(file), false, 'an unsynced cache saves nothing');
  });
});
