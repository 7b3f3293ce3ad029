// The state cache's pure parts: list entries made from inspect documents (summary.ts), which
// list queries it answers itself (list-query.ts), and what each Docker event does (docker-events.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DockerEvent } from '../../../src/docker/types';
import { actionForEvent, EVENT_FILTERS } from '../../../src/docker-cache/docker-events';
import { cacheableListQuery, isTracked, matchesListQuery } from '../../../src/docker-cache/list-query';
import { commandText, humanDuration, portsOf, statusText, summaryFromInspect } from '../../../src/docker-cache/summary';
import { dockerState, INSPECT, INSPECTED_AT_MS, LISTED, type DockerState } from '../../support/fixtures/docker-container';

const byPort = (a: { PrivatePort: number; Type: string; IP?: string }, b: { PrivatePort: number; Type: string; IP?: string }): number =>
  `${a.PrivatePort}/${a.Type}/${a.IP ?? ''}`.localeCompare(`${b.PrivatePort}/${b.Type}/${b.IP ?? ''}`);

const state = (over: Partial<DockerState>): DockerState => dockerState({ Status: 'exited', ...over });

describe('list entry synthesised from inspect', () => {
  it('equals what Docker listed for the same container', () => {
    const made = summaryFromInspect(INSPECT, LISTED.Image, INSPECTED_AT_MS);
    // Docker walks a Go map for the ports, so their order is not part of the answer.
    assert.deepEqual({ ...made, Ports: [...made.Ports].sort(byPort) }, { ...LISTED, Ports: [...LISTED.Ports].sort(byPort) });
  });

  it('takes the image name it is given (the caller knows whether the reference still names the image)', () => {
    assert.equal(summaryFromInspect(INSPECT, INSPECT.Image, INSPECTED_AT_MS).Image, INSPECT.Image);
  });

  it('does not share label or network objects with the cached document', () => {
    const made = summaryFromInspect(INSPECT, LISTED.Image, INSPECTED_AT_MS);
    made.Labels.extra = 'x';
    made.NetworkSettings.Networks.bridge!.IPAddress = '0.0.0.0';
    assert.equal(INSPECT.Config.Labels.extra, undefined);
    assert.equal(INSPECT.NetworkSettings.Networks.bridge!.IPAddress, '172.17.0.2');
  });

  it('quotes arguments with spaces in Command, as Docker does', () => {
    assert.equal(commandText('/pause', []), '/pause');
    assert.equal(commandText('sh', ['-c', 'sleep 1']), "sh -c 'sleep 1'");
  });

  it('lists an exposed but unpublished port without a host side', () => {
    assert.deepEqual(portsOf({ '80/tcp': null as unknown as [] }), [{ PrivatePort: 80, Type: 'tcp' }]);
    assert.deepEqual(portsOf(undefined), []);
  });

  it("writes Status in Docker's words for every state", () => {
    const now = Date.parse('2026-11-22T03:00:00Z');
    assert.equal(statusText(state({ Status: 'created' }), now), 'Created');
    assert.equal(statusText(state({ Status: 'running', Running: true, StartedAt: '2026-11-22T02:55:00Z' }), now), 'Up 5 minutes');
    assert.equal(statusText(state({ Status: 'paused', Running: true, Paused: true, StartedAt: '2026-11-22T02:59:59Z' }), now), 'Up 1 second (Paused)');
    assert.equal(
      statusText(state({ Status: 'restarting', Running: true, Restarting: true, ExitCode: 2, FinishedAt: '2026-11-22T02:59:30Z' }), now),
      'Restarting (2) 30 seconds ago',
    );
    assert.equal(
      statusText(state({ Status: 'exited', ExitCode: 137, StartedAt: '2026-11-22T01:00:00Z', FinishedAt: '2026-11-22T02:00:00Z' }), now),
      'Exited (137) About an hour ago',
    );
    assert.equal(statusText(state({ Status: 'dead', Dead: true, StartedAt: '2026-11-22T01:00:00Z' }), now), 'Dead');
    assert.equal(statusText(state({ Status: 'removing', StartedAt: '2026-11-22T01:00:00Z' }), now), 'Removal In Progress');
    const healthy = state({ Status: 'running', Running: true, StartedAt: '2026-11-22T02:59:00Z', Health: { Status: 'starting', FailingStreak: 0, Log: [] } });
    assert.equal(statusText(healthy, now), 'Up About a minute (health: starting)');
  });

  it('rounds durations as Docker does', () => {
    assert.equal(humanDuration(400), 'Less than a second');
    assert.equal(humanDuration(59_999), '59 seconds');
    assert.equal(humanDuration(119_000), 'About a minute');
    assert.equal(humanDuration(59 * 60_000), '59 minutes');
    assert.equal(humanDuration(89 * 60_000), 'About an hour');
    assert.equal(humanDuration(91 * 60_000), '2 hours');
    assert.equal(humanDuration(3 * 86_400_000), '3 days');
    assert.equal(humanDuration(21 * 86_400_000), '3 weeks');
    assert.equal(humanDuration(90 * 86_400_000), '3 months');
    assert.equal(humanDuration(800 * 86_400_000), '2 years');
  });
});

describe('which list queries the cache answers', () => {
  const TYPE = 'io.kubernetes.docker.type';
  const SANDBOX = 'io.kubernetes.sandbox.id';

  it("answers the shim's own queries: pinned by the type label, optionally by id", () => {
    assert.deepEqual(cacheableListQuery({ all: true, filters: { label: [`${TYPE}=podsandbox`] } }), {
      all: true,
      labels: [{ key: TYPE, value: 'podsandbox' }],
      idParts: undefined,
    });
    assert.deepEqual(cacheableListQuery({ all: true, filters: { id: ['abc'], label: [`${TYPE}=container`, 'tier'] } })?.idParts, ['abc']);
    assert.ok(cacheableListQuery({ all: false, filters: { label: [`${TYPE}=container`, `${SANDBOX}=${'a'.repeat(64)}`] } }));
    assert.ok(cacheableListQuery({ all: true, filters: { label: [TYPE] } }), 'the bare key also confines it to tracked containers');
  });

  it('leaves everything else to Docker', () => {
    assert.equal(cacheableListQuery({ all: true }), undefined, 'every container on the host');
    assert.equal(cacheableListQuery({ all: true, filters: { label: ['tier=web'] } }), undefined, 'labels anyone can set');
    assert.equal(cacheableListQuery({ all: true, filters: { label: [`${SANDBOX}=${'a'.repeat(64)}`] } }), undefined, "a pod's containers, when stopping it");
    assert.equal(cacheableListQuery({ all: true, filters: { name: ['^/k8s_POD_x$'], label: [`${TYPE}=podsandbox`] } }), undefined, 'name filter');
    assert.equal(cacheableListQuery({ all: true, size: true, filters: { label: [`${TYPE}=container`] } }), undefined, 'sizes');
    assert.equal(cacheableListQuery({ all: true, filters: { id: ['^ab'], label: [`${TYPE}=container`] } }), undefined, 'a regular expression');
    assert.equal(cacheableListQuery({ all: true, filters: { label: [`${TYPE.toUpperCase()}=container`] } }), undefined, 'label keys are case-sensitive');
  });

  it("applies Docker's semantics: all label terms, any id part anywhere in the ID, running unless all", () => {
    const c = { id: 'abc123'.padEnd(64, '0'), running: false, labels: { [TYPE]: 'container', tier: 'web', empty: '' } };
    const q = (filters: Record<string, string[]>, all = true) => cacheableListQuery({ all, filters })!;
    assert.equal(matchesListQuery(c, q({ label: [`${TYPE}=container`, 'tier=web'] })), true);
    assert.equal(matchesListQuery(c, q({ label: [`${TYPE}=container`, 'tier=db'] })), false);
    assert.equal(matchesListQuery(c, q({ label: [`${TYPE}=container`, 'empty='] })), true, 'an empty value is a value');
    assert.equal(matchesListQuery(c, q({ label: [`${TYPE}=container`, 'tier='] })), false);
    assert.equal(matchesListQuery(c, q({ label: [`${TYPE}=container`, 'absent'] })), false);
    assert.equal(matchesListQuery(c, q({ label: [`${TYPE}=container`], id: ['c123'] })), true, 'Docker matches inside the ID');
    assert.equal(matchesListQuery(c, q({ label: [`${TYPE}=container`], id: ['ffff', 'abc'] })), true, 'any of the ids');
    assert.equal(matchesListQuery(c, q({ label: [`${TYPE}=container`], id: ['ffff'] })), false);
    assert.equal(matchesListQuery(c, q({ label: [`${TYPE}=container`] }, false)), false, 'stopped, and only running ones asked for');
    assert.equal(matchesListQuery({ ...c, running: true }, q({ label: [`${TYPE}=container`] }, false)), true);
  });

  it('tracks the containers with the type label', () => {
    assert.equal(isTracked({ [TYPE]: 'podsandbox' }), true);
    assert.equal(isTracked({ [SANDBOX]: 'x' }), false);
    assert.equal(isTracked({ tier: 'web' }), false);
    assert.equal(isTracked(null), false);
  });
});

describe('what each Docker event does to the cache', () => {
  const ID = 'd'.repeat(64);
  const ours = { 'io.kubernetes.docker.type': 'container', name: 'k8s_x' };
  const ev = (Type: string, Action: string, Attributes: Record<string, string>, id = ID): DockerEvent => ({
    Type,
    Action,
    Actor: { ID: id, Attributes },
    time: 0,
    timeNano: 0,
  });
  const unknown = (): boolean => false;
  const known = (id: string): boolean => id === ID;

  it('re-inspects a tracked container after each state change, and forgets a destroyed one', () => {
    for (const action of ['create', 'start', 'die', 'stop', 'kill', 'rename', 'update', 'pause', 'unpause', 'restart']) {
      assert.deepEqual(actionForEvent(ev('container', action, ours), unknown), { kind: 'refresh', id: ID }, action);
    }
    assert.deepEqual(actionForEvent(ev('container', 'oom', ours), unknown), { kind: 'oom', id: ID }, 'an OOM kill is remembered too');
    assert.deepEqual(actionForEvent(ev('container', 'oom', { name: 'other' }), unknown), { kind: 'ignore' });
    assert.deepEqual(actionForEvent(ev('container', 'destroy', ours), unknown), { kind: 'forget', id: ID });
    assert.deepEqual(actionForEvent(ev('container', 'health_status: unhealthy', ours), unknown), { kind: 'refresh', id: ID });
  });

  it('ignores containers that are not the shim’s, and exec and other chatter', () => {
    assert.deepEqual(actionForEvent(ev('container', 'start', { name: 'other' }), unknown), { kind: 'ignore' });
    assert.deepEqual(actionForEvent(ev('container', 'exec_start: sh -c true', ours), unknown), { kind: 'ignore' });
    assert.deepEqual(actionForEvent(ev('container', 'exec_create: sh', ours), known), { kind: 'ignore' });
    assert.deepEqual(actionForEvent(ev('container', 'attach', ours), known), { kind: 'ignore' });
    assert.deepEqual(actionForEvent(ev('volume', 'create', {}), known), { kind: 'ignore' });
  });

  it('re-inspects the container a network connect or disconnect names, when the cache holds it', () => {
    const net = (action: string): DockerEvent => ev('network', action, { container: ID, name: 'bridge', type: 'bridge' }, 'f'.repeat(64));
    assert.deepEqual(actionForEvent(net('connect'), known), { kind: 'refresh', id: ID });
    assert.deepEqual(actionForEvent(net('disconnect'), known), { kind: 'refresh', id: ID });
    assert.deepEqual(actionForEvent(net('connect'), unknown), { kind: 'ignore' });
    assert.deepEqual(actionForEvent(net('create'), known), { kind: 'ignore' });
  });

  it('drops the image answers on any image change or container commit', () => {
    for (const action of ['pull', 'tag', 'untag', 'delete', 'import', 'load', 'create']) {
      assert.deepEqual(actionForEvent(ev('image', action, { name: 'busybox' }), unknown), { kind: 'images-changed' }, action);
    }
    assert.deepEqual(actionForEvent(ev('container', 'commit', {}), unknown), { kind: 'images-changed' });
    assert.deepEqual(actionForEvent(ev('image', 'save', {}), unknown), { kind: 'ignore' });
  });

  it('reads Action and Actor only: the same on an API 1.41 event (with the legacy status, id, from) and a 1.52 one (without)', () => {
    const legacy = { status: 'start', id: ID, from: 'busybox', scope: 'local', ...ev('container', 'start', ours) } as DockerEvent;
    assert.deepEqual(actionForEvent(legacy, unknown), { kind: 'refresh', id: ID });
    assert.deepEqual(actionForEvent(ev('container', 'start', ours), unknown), { kind: 'refresh', id: ID });
    // An event whose legacy fields disagree with Action/Actor is read by Action/Actor.
    const stale = { ...legacy, status: 'destroy', id: 'e'.repeat(64) } as DockerEvent;
    assert.deepEqual(actionForEvent(stale, unknown), { kind: 'refresh', id: ID });
  });

  it('subscribes to exactly the actions it acts on, so dockerd filters exec events out', () => {
    assert.deepEqual(EVENT_FILTERS.type, ['container', 'network', 'image']);
    assert.ok(!EVENT_FILTERS.event!.some((a) => a.startsWith('exec')));
    for (const a of ['create', 'destroy', 'connect', 'pull', 'untag', 'commit', 'health_status']) assert.ok(EVENT_FILTERS.event!.includes(a), a);
    // With health_status among them dockerd matches each value as a prefix: none may be a
    // prefix of an exec action.
    for (const a of EVENT_FILTERS.event!) for (const exec of ['exec_create: sh', 'exec_start: sh', 'exec_die']) assert.ok(!exec.startsWith(a), a);
  });
});
