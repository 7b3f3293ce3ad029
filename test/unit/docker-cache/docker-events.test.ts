// What each Docker event does to the state cache (src/docker-cache/docker-events.ts). Pure.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DockerEvent } from '../../../src/docker/types';
import { actionForEvent, EVENT_FILTERS } from '../../../src/docker-cache/docker-events';

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
    for (const action of ['create', 'start', 'die', 'rename', 'update', 'pause', 'unpause', 'restart']) {
      assert.deepEqual(actionForEvent(ev('container', action, ours), unknown), { kind: 'refresh', id: ID }, action);
    }
    // A signal changes nothing an inspect shows; a stop's change came with its `die` before it.
    for (const action of ['kill', 'stop']) assert.deepEqual(actionForEvent(ev('container', action, ours), known), { kind: 'ignore' }, action);
    assert.ok(!EVENT_FILTERS.event?.includes('kill') && !EVENT_FILTERS.event?.includes('stop'), 'nor does Docker send them');
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
