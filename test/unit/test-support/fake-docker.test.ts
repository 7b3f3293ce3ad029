// The fake Docker (test/support/fake-docker.ts) behaves as the unit tests built on it assume:
// Docker's rules for names, prefixes, running containers and missing images; faults that hit
// the call they name and no other; held and hung calls.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CancelledError,
  DockerBadRequestError,
  DockerConflictError,
  DockerNotFoundError,
  DockerServerError,
  DockerTimeoutError,
} from '../../../src/errors';
import { FakeDocker } from '../../support/fake-docker';
import { waitFor } from '../../support/poll';

function withImage(): FakeDocker {
  const docker = new FakeDocker();
  docker.addImage('busybox:1');
  return docker;
}

describe('fake Docker', () => {
  it('keeps Docker’s rules: unique names, unique prefixes, force for running containers, local images for create', async () => {
    const docker = withImage();
    const id = await docker.createContainer({ name: 'one', Image: 'busybox:1', Labels: { a: 'b' } });
    assert.match(id, /^[0-9a-f]{64}$/);
    await assert.rejects(docker.createContainer({ name: 'one', Image: 'busybox:1' }), DockerConflictError);
    await assert.rejects(docker.createContainer({ name: 'two', Image: 'absent:1' }), DockerNotFoundError);
    assert.equal((await docker.inspectContainer(id.slice(0, 8))).Name, '/one');
    assert.equal((await docker.inspectContainer('one')).Id, id);
    const other = docker.addContainer({ Id: `${id.slice(0, 8)}${'0'.repeat(56)}` });
    await assert.rejects(docker.inspectContainer(id.slice(0, 8)), DockerBadRequestError, 'an ambiguous prefix');
    docker.containers.delete(other.Id);

    await docker.startContainer(id);
    await assert.rejects(docker.removeContainer(id, { force: false, removeVolumes: false }), DockerConflictError);
    assert.deepEqual((await docker.listContainers({ all: false, filters: { label: ['a=b'] } })).map((c) => c.Id), [id]);
    assert.deepEqual(await docker.listContainers({ all: true, filters: { label: ['a=c'] } }), []);
    await docker.stopContainer(id, 1);
    assert.deepEqual(await docker.listContainers({ all: false }), [], 'a stopped container is listed with all only');
    await docker.removeContainer(id, { force: false, removeVolumes: false });
    await assert.rejects(docker.inspectContainer(id), DockerNotFoundError);
    assert.deepEqual(docker.methods().slice(0, 3), ['createContainer', 'createContainer', 'createContainer']);
  });

  it('fails the Nth call, or the calls a predicate picks, and no other; a cleared fault stops', async () => {
    const docker = withImage();
    docker.fail('inspectImage', { nth: 2, error: new DockerServerError('boom', 500) });
    await docker.inspectImage('busybox:1');
    await assert.rejects(docker.inspectImage('busybox:1'), DockerServerError);
    await docker.inspectImage('busybox:1');

    const picky = docker.fail('inspectImage', { when: (ref) => ref === 'busybox:1', times: Infinity, error: () => new DockerTimeoutError('slow') });
    await assert.rejects(docker.inspectImage('busybox:1'), DockerTimeoutError);
    await assert.rejects(docker.inspectImage('busybox:1'), DockerTimeoutError);
    await assert.rejects(docker.inspectImage('other'), DockerNotFoundError, 'not picked: the store answers');
    assert.equal(picky.hits, 2);
    picky.clear();
    await docker.inspectImage('busybox:1');
  });

  it('applies the effect of an afterEffect fault before failing (the answer was lost)', async () => {
    const docker = withImage();
    docker.fail('createContainer', { afterEffect: true, error: new DockerTimeoutError('slow') });
    await assert.rejects(docker.createContainer({ name: 'lost', Image: 'busybox:1' }), DockerTimeoutError);
    assert.ok(docker.byName('lost'), 'Docker made it all the same');
  });

  it('hangs a call until its signal aborts, then fails it as the real client does', async () => {
    const docker = withImage();
    docker.fail('createContainer', { hang: true });
    const caller = new AbortController();
    const creating = docker.createContainer({ name: 'hung', Image: 'busybox:1' }, { signal: caller.signal });
    await waitFor('the call', () => docker.calls.length === 1);
    caller.abort(new CancelledError('client went away'));
    await assert.rejects(creating, (err) => err instanceof CancelledError && err.message === 'client went away');
    assert.equal(docker.byName('hung'), undefined, 'without afterEffect nothing was made');
  });

  it('holds a reply: it tells what Docker saw when asked, and faults are checked on release', async () => {
    const docker = withImage();
    const c = docker.addContainer({ State: { Status: 'created' } });
    const slow = docker.hold('inspectContainer');
    const first = docker.inspectContainer(c.Id);
    await waitFor('the call', () => docker.calls.length === 1);
    docker.containers.get(c.Id)!.State.Status = 'running';
    slow.release();
    assert.equal((await first).State.Status, 'created');

    const again = docker.hold('inspectContainer');
    const second = docker.inspectContainer(c.Id);
    await waitFor('the second call', () => docker.calls.length === 2);
    docker.fail('*', { error: new DockerServerError('down', 500) });
    again.release();
    await assert.rejects(second, DockerServerError);
  });

  it('streams only the events the test emits, and ends streams on request', async () => {
    const docker = new FakeDocker();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const ev of docker.events({}, { onSubscribed: () => seen.push('subscribed') })) seen.push(`${ev.Action} ${ev.Actor.ID}`);
    })();
    await waitFor('the subscription', () => docker.subscriptions === 1);
    docker.emit('start', 'abc');
    docker.endStreams(new DockerServerError('reset', 500));
    await assert.rejects(reading, DockerServerError);
    assert.deepEqual(seen, ['subscribed', 'start abc']);
  });
});
