// The saved container documents a restarted shim starts from (src/docker-cache/container-snapshot.ts):
// the file's format and what a corrupt one does, which saved documents the first sync keeps
// (savedDocumentsHeld: Docker's event log reaches back to the save, no event since touched the
// container, and its list shows it with the same name and state) and that it inspects them again after.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import {
  CLOCK_SLACK_MS,
  ContainerSnapshotFile,
  containerSnapshotText,
  decodeContainerSnapshot,
  replayEventLog,
  REPLAY_MAX_EVENTS,
  savedDocumentsHeld,
} from '../../../src/docker-cache/container-snapshot';
import { DockerStateCache } from '../../../src/docker-cache/state-cache';
import type { DockerClient, EventsOptions } from '../../../src/docker/client';
import type { ContainerInspect, DockerEvent } from '../../../src/docker/types';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker } from '../../support/fake-docker';
import { waitFor } from '../../support/poll';
import { recordingLogger } from '../../support/recording-logger';
import { inspectDoc, listEntryOf, runningState } from '../../support/fixtures/docker-container';

const LABELS = { 'io.kubernetes.docker.type': 'container' };
const ID_A = 'a'.repeat(64);
const ID_B = 'b'.repeat(64);
const ID_C = 'c'.repeat(64);
const ID_D = 'd'.repeat(64);

function doc(id: string, state = runningState()): ContainerInspect {
  return inspectDoc({ Id: id, Name: `/k8s_c_${id.slice(0, 4)}_ns_uid_0`, State: state, Config: { Labels: LABELS } });
}

/** A state cache over `docker` that saves its snapshot to `file`. */
const savingTo = (docker: FakeDocker, file: string): DockerStateCache =>
  new DockerStateCache(docker, silentLogger(), undefined, undefined, new ContainerSnapshotFile(file, silentLogger()));

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
  /** Docker holding container A, and a started state cache over it that saves to a fresh file. */
  const startedWithA = async (): Promise<{ file: string; docker: FakeDocker; started: DockerStateCache }> => {
    const file = tempFile();
    const docker = new FakeDocker();
    docker.addImage('busybox', { Id: 'sha256:1111' });
    docker.containers.set(ID_A, doc(ID_A));
    const started = savingTo(docker, file);
    await started.start();
    return { file, docker, started };
  };

  it('round-trips container documents, and leaves out entries that are not', () => {
    const text = [...containerSnapshotText([doc(ID_A), doc(ID_B)], new Date('2026-11-25T00:00:00Z'))].join('');
    assert.deepEqual(decodeContainerSnapshot(text).containers.map((c) => c.Id), [ID_A, ID_B]);
    const mixed = JSON.parse(text) as { containers: unknown[] };
    mixed.containers.push(null, { Id: '../../etc' }, { Id: ID_C, State: {} }, 7);
    assert.deepEqual(decodeContainerSnapshot(JSON.stringify(mixed)), { savedAtMs: Date.parse('2026-11-25T00:00:00Z'), containers: [doc(ID_A), doc(ID_B)], skipped: 4 });
    assert.throws(() => decodeContainerSnapshot(JSON.stringify({ ...mixed, savedAt: 'yesterday' })), /no savedAt time/);
    assert.throws(() => decodeContainerSnapshot('{"format":"other","containers":[]}'), /not a cri-docker-shim.containers\/v1 document/);
    assert.throws(() => decodeContainerSnapshot('{"format":'));
  });

  it('makes its text in pieces of about 64 Ki characters, which joined are the whole document as JSON', async () => {
    const savedAt = new Date('2026-11-25T00:00:00Z');
    const docs = Array.from({ length: 400 }, (_, i) => doc(i.toString(16).padStart(64, '0')));
    const longest = Math.max(...docs.map((d) => JSON.stringify(d).length));
    const pieces = [...containerSnapshotText(docs, savedAt)];
    const whole = JSON.stringify({ format: 'cri-docker-shim.containers/v1', savedAt: savedAt.toISOString(), containers: docs });
    assert.ok(whole.length > 2 * 65_536, `${whole.length} characters: enough for several pieces`);
    assert.equal(pieces.join(''), whole);
    assert.ok(pieces.length >= 3, `${pieces.length} pieces`);
    for (const piece of pieces) assert.ok(piece.length < 65_536 + longest + 1, `a piece of ${piece.length} characters`);
    assert.equal([...containerSnapshotText([], savedAt)].join(''), JSON.stringify({ format: 'cri-docker-shim.containers/v1', savedAt: savedAt.toISOString(), containers: [] }));

    const file = tempFile();
    await new ContainerSnapshotFile(file, silentLogger()).save(docs, savedAt);
    assert.equal(fs.readFileSync(file, 'utf8'), whole, 'the file holds them in order');
  });

  it('loads nothing, and says why, from a corrupt file or a symlink; nothing and no word when there is none', async () => {
    const file = tempFile();
    const rec = recordingLogger();
    const snapshot = new ContainerSnapshotFile(file, rec.log);
    assert.equal(snapshot.load(), undefined);
    assert.equal(rec.lines().length, 0, 'a first start is not worth a warning');
    fs.writeFileSync(file, '{"format":"cri-docker-shim.containers/v1","containers":[{"Id"');
    assert.equal(snapshot.load(), undefined);
    assert.match(rec.lines().at(-1)!.msg, /container snapshot corrupt/);
    fs.rmSync(file);
    const elsewhere = tempFile();
    await new ContainerSnapshotFile(elsewhere, silentLogger()).save([doc(ID_A)]);
    fs.symlinkSync(elsewhere, file);
    assert.equal(snapshot.load(), undefined);
    assert.match(rec.lines().at(-1)!.msg, /container snapshot unreadable/);
    assert.equal(fs.statSync(elsewhere).mode & 0o777, 0o600, 'readable by its owner only');
  });

  it('holds a saved document only when Docker\'s event log reaches back to the save, no event since touched it, and the list agrees', () => {
    const savedAtMs = Date.parse('2026-11-25T10:00:00Z');
    const at = (ms: number, Action: string, id: string, Type = 'container', Attributes: Record<string, string> = {}): DockerEvent => ({
      Type,
      Action,
      Actor: { ID: id, Attributes },
      time: Math.floor(ms / 1000),
      timeNano: ms * 1e6,
    });
    const before = at(savedAtMs - 60_000, 'exec_start: sh', ID_C);
    const saved = { savedAtMs, containers: [doc(ID_A), doc(ID_B)] };
    const listed = [listEntryOf(doc(ID_A)), listEntryOf(doc(ID_B))];
    const held = (replay: DockerEvent[], list = listed): string[] => [...savedDocumentsHeld(saved, replay, list).held].sort();

    assert.deepEqual(held([before]), [ID_A, ID_B], 'nothing since the save');
    assert.deepEqual(held([before, at(savedAtMs + 1_000, 'die', ID_B), at(savedAtMs + 2_000, 'start', ID_B)]), [ID_A], 'B restarted since: same name, same state, yet not held');
    assert.deepEqual(held([before, at(savedAtMs + 1_000, 'exec_die', ID_A), at(savedAtMs + 1_000, 'pull', 'busybox', 'image')]), [ID_A, ID_B], 'what the cache ignores touches nothing');
    assert.deepEqual(held([before, at(savedAtMs + 1_000, 'disconnect', 'net', 'network', { container: ID_A })]), [ID_B], 'a network change of a saved container');
    assert.deepEqual(held([before, at(savedAtMs - CLOCK_SLACK_MS / 2, 'update', ID_A)]), [ID_B], 'an event just before the save may not be in it');

    const cold = savedDocumentsHeld(saved, [at(savedAtMs + 1_000, 'exec_start: sh', ID_C)], listed);
    assert.deepEqual([cold.held.size, /does not reach back/.test(cold.cold ?? '')], [0, true], 'the log overran, or dockerd restarted since the save');
    assert.equal(savedDocumentsHeld(saved, [], listed).held.size, 0, 'an empty log proves nothing');

    assert.deepEqual(held([before], [{ ...listed[0]!, State: 'exited' }, listed[1]!]), [ID_B], 'listed in another state');
    assert.deepEqual(held([before], [{ ...listed[0]!, Names: ['/renamed'] }, listed[1]!]), [ID_B], 'renamed');
    assert.deepEqual(held([before], [listed[1]!]), [ID_B], 'gone from the list');
  });

  it('reads Docker\'s whole event log up to now, and believes no replay cut short or longer than Docker keeps', async () => {
    const docker = new FakeDocker();
    const t0 = Date.now() - 10_000;
    docker.emit('create', ID_A, LABELS, 'container', t0);
    docker.emit('start', ID_A, LABELS, 'container', t0 + 1_000);
    docker.emit('die', ID_A, LABELS, 'container', Date.now() + 60_000);
    const now = Date.now();
    assert.deepEqual((await replayEventLog(docker, now)).map((ev) => ev.Action), ['create', 'start'], 'the log from its start, up to now');
    assert.deepEqual(docker.argsOf('events'), [[{ since: 1, until: now / 1000 }]], 'unfiltered');

    const stub = (events: (signal: AbortSignal | undefined) => AsyncIterable<DockerEvent>): Pick<DockerClient, 'events'> => ({
      events: (_query: object, opts?: EventsOptions) => events(opts?.signal),
    });
    const ev = (i: number): DockerEvent => ({ Type: 'container', Action: 'exec_start', Actor: { ID: ID_C, Attributes: {} }, time: i, timeNano: i * 1e9 });
    const endless = stub(async function* () {
      for (let i = 0; ; i++) yield ev(i);
    });
    await assert.rejects(replayEventLog(endless, Date.now()), new RegExp(`more than ${REPLAY_MAX_EVENTS} events`));
    // Docker waits for `until` when its clock is behind; the stream then ends quietly at the timeout.
    const waits = stub(async function* (signal) {
      yield ev(1);
      await new Promise<void>((resolve) => {
        const until = setTimeout(resolve, 5_000);
        signal?.addEventListener('abort', () => (clearTimeout(until), resolve()), { once: true });
      });
    });
    await assert.rejects(replayEventLog(waits, Date.now(), 50), /did not finish its replay within 50 ms/);
  });

  it('starts the first sync from the saved documents no event since touched and Docker still lists, inspects the rest, then confirms the kept ones', async () => {
    const file = tempFile();
    const docker = new FakeDocker();
    docker.addImage('busybox', { Id: 'sha256:1111' });
    const unchanged = doc(ID_A);
    const died = doc(ID_B);
    // Restarted while the shim was down: the same name and state, and (hours up) the same
    // "Up 3 hours" in Docker's list; only Docker's events tell.
    const startedAt = (minutesAgo: number): string => new Date(Date.now() - minutesAgo * 60_000).toISOString();
    const restarted = doc(ID_D, runningState(startedAt(190)));
    for (const c of [unchanged, died, restarted, doc(ID_C)]) docker.containers.set(c.Id, c);
    docker.emit('create', ID_C, LABELS, 'container', Date.now() - 60_000);
    await new ContainerSnapshotFile(file, silentLogger()).save([unchanged, died, restarted]);
    docker.containers.set(ID_B, doc(ID_B, { Status: 'exited', Running: false, ExitCode: 1, StartedAt: died.State.StartedAt, FinishedAt: '2026-11-25T09:30:00Z' }));
    docker.emit('die', ID_B, LABELS);
    docker.containers.set(ID_D, doc(ID_D, runningState(startedAt(185), { Pid: 43 })));
    docker.emit('die', ID_D, LABELS);
    docker.emit('start', ID_D, LABELS);
    // A's inspect is held until the test lets it go: the cache is seen answering before it.
    const confirmation = docker.hold('inspectContainer', (id) => id === ID_A);

    const rec = recordingLogger();
    cache = new DockerStateCache(docker, rec.log, { initialMs: 5, maxMs: 20, subscribeTimeoutMs: 1_000 }, undefined, new ContainerSnapshotFile(file, rec.log));
    await cache.start();
    assert.equal(cache.synced, true);
    assert.deepEqual([...cache.containers.values()].map((c) => [c.Id, c.State.Status, c.State.Pid]).sort(), [
      [ID_A, 'running', 42],
      [ID_B, 'exited', 0],
      [ID_C, 'running', 42],
      [ID_D, 'running', 43],
    ]);
    assert.equal(rec.lines().find((l) => l.msg === 'state cache synced with Docker')?.fromSnapshot, 1);
    const inspected = (): unknown[] => docker.argsOf('inspectContainer').map((a) => a[0]);
    assert.deepEqual(inspected().filter((id) => id !== ID_A).sort(), [ID_B, ID_C, ID_D], 'B and D (events since the save) and C (not saved) at the sync');
    confirmation.release();
    await waitFor('A to be inspected again, to confirm', () => inspected().includes(ID_A) && rec.lines().some((l) => l.msg === 'containers from the snapshot inspected again'));
  });

  it('inspects every container, and says why, when Docker\'s event log does not reach back to the save (dockerd restarted)', async () => {
    const file = tempFile();
    const docker = new FakeDocker();
    docker.addImage('busybox', { Id: 'sha256:1111' });
    for (const id of [ID_A, ID_B]) docker.containers.set(id, doc(id));
    await new ContainerSnapshotFile(file, silentLogger()).save([doc(ID_A), doc(ID_B)]);
    docker.eventLog = [];
    const rec = recordingLogger();
    cache = new DockerStateCache(docker, rec.log, { initialMs: 5, maxMs: 20, subscribeTimeoutMs: 1_000 }, undefined, new ContainerSnapshotFile(file, rec.log));
    await cache.start();
    assert.equal(rec.lines().find((l) => l.msg === 'state cache synced with Docker')?.fromSnapshot, 0);
    assert.match(String(rec.lines().find((l) => l.msg === 'container snapshot not used; every container inspected')?.reason), /does not reach back/);
    assert.deepEqual(docker.argsOf('inspectContainer').map((a) => a[0]).sort(), [ID_A, ID_B]);
  });

  it('saves a change under way as not in the documents: the save time is when it was asked for', async () => {
    const { file, docker, started } = await startedWithA();
    const slow = docker.hold('inspectContainer', (id) => id === ID_A);
    const askedAfterMs = Date.now() + 1;
    await waitFor('a later clock', () => Date.now() >= askedAfterMs);
    const inspectsOfA = (): number => docker.argsOf('inspectContainer').filter((a) => a[0] === ID_A).length;
    const before = inspectsOfA();
    docker.emit('die', ID_A, LABELS);
    await waitFor('the re-inspect to start', () => inspectsOfA() > before);
    // The event reaches the cache a tick or more after emit: it was heard by the time its re-inspect started.
    const askedBeforeMs = Date.now();
    await waitFor('a later clock', () => Date.now() > askedBeforeMs);
    await started.stop();
    slow.release();
    const savedAtMs = new ContainerSnapshotFile(file, silentLogger()).load()!.savedAtMs;
    assert.ok(savedAtMs >= askedAfterMs && savedAtMs <= askedBeforeMs, `saved as of ${savedAtMs}, the die heard between ${askedAfterMs} and ${askedBeforeMs}`);
  });

  it('saves what it holds at a stop, and nothing it cannot vouch for', async () => {
    const { file, docker, started } = await startedWithA();
    await started.stop();
    assert.deepEqual(new ContainerSnapshotFile(file, silentLogger()).load()?.containers.map((c) => c.Id), [ID_A]);
    fs.rmSync(file);
    const never = savingTo(docker, file);
    docker.fail('*', { error: () => new Error('Docker is away'), times: Infinity });
    void never.start();
    await never.stop();
    assert.equal(fs.existsSync(file), false, 'an unsynced cache saves nothing');
  });
});
