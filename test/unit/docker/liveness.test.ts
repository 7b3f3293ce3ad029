// DockerLiveness: Status's view of Docker, answered within its bound whatever Docker does.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { DockerLiveness } from '../../../src/docker/liveness';
import { DockerUnreachableError } from '../../../src/errors';

/** A ping Docker answers when the test says. */
function controlledPing() {
  const pending: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  return {
    pings: () => pending.length,
    ping: () => new Promise<void>((resolve, reject) => pending.push({ resolve, reject })),
    answer: () => pending.shift()!.resolve(),
    fail: (e: Error) => pending.shift()!.reject(e),
  };
}

describe('DockerLiveness', () => {
  it('is ready when the ping answers, and sends one ping at a time', async () => {
    const docker = controlledPing();
    let now = 0;
    const live = new DockerLiveness(docker, () => now, 10, 5_000);
    const first = live.check();
    const second = live.check();
    assert.equal(docker.pings(), 1, 'the second check shares the ping under way');
    docker.answer();
    assert.deepEqual(await first, { ready: true });
    assert.deepEqual(await second, { ready: true });
  });

  it('a hung Docker: ready for the first seconds, then not, within the bound each time; ready again when it answers', async () => {
    const docker = controlledPing();
    let now = 0;
    const live = new DockerLiveness(docker, () => now, 10, 5_000);
    assert.deepEqual(await live.check(), { ready: true }, 'a moment of silence is no outage');
    now = 4_999;
    assert.deepEqual(await live.check(), { ready: true });
    now = 5_000;
    assert.deepEqual(await live.check(), { ready: false, message: 'docker: no answer for 5 s' });
    assert.equal(docker.pings(), 1, 'no pile of pings behind the hung one');
    docker.answer();
    assert.deepEqual(await live.check(), { ready: true }, 'the next ping is under way; the last one answered');
  });

  it('a ping that fails is not ready at once, until one answers', async () => {
    const docker = controlledPing();
    const live = new DockerLiveness(docker, () => 0, 10, 5_000);
    const check = live.check();
    docker.fail(new DockerUnreachableError('connect ENOENT /var/run/docker.sock'));
    const down = await check;
    assert.equal(down.ready, false);
    assert.match(down.ready ? '' : down.message, /ENOENT/);
    const again = live.check();
    docker.answer();
    assert.deepEqual(await again, { ready: true });
  });
});
