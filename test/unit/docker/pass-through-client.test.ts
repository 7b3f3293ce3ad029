// The base the Docker client's decorators stand on (src/docker/pass-through-client.ts): every
// call of DOCKER_CALLS is there, passed on with its arguments as they came and to the client
// underneath as its receiver, and a subclass's own calls are left as written.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DOCKER_CALLS, type CallOptions, type DockerCall, type DockerClient } from '../../../src/docker/client';
import { fillCalls, PassThroughClient } from '../../../src/docker/pass-through-client';
import { InstrumentedDockerClient, type DockerCallRecorder } from '../../../src/docker/instrumented-client';
import type { DockerVersion } from '../../../src/docker/types';

interface Seen {
  call: DockerCall;
  args: unknown[];
  receiver: unknown;
}

/** A client whose every call records itself (its arguments and receiver) and answers its own name. */
function recordingDocker(): { docker: DockerClient; seen: Seen[] } {
  const seen: Seen[] = [];
  const docker: Record<string, unknown> = { endpoint: 'unix:///recording.sock' };
  for (const call of DOCKER_CALLS) {
    docker[call] = function (this: unknown, ...args: unknown[]) {
      seen.push({ call, args, receiver: this });
      return Promise.resolve(call);
    };
  }
  return { docker: docker as unknown as DockerClient, seen };
}

class VersionOnly extends PassThroughClient {
  override async version(_opts?: CallOptions): Promise<DockerVersion> {
    return { Version: 'written', ApiVersion: '1.41' } as DockerVersion;
  }
}

describe('the pass-through base of the Docker client', () => {
  it('has every call, each passed on with its arguments untouched and the client underneath as receiver', async () => {
    const { docker, seen } = recordingDocker();
    const through = new PassThroughClient(docker);
    assert.equal(through.endpoint, 'unix:///recording.sock');
    for (const [i, call] of DOCKER_CALLS.entries()) {
      const args = Array.from({ length: i % 4 }, (_, n) => `${call}-${n}`);
      const answer = (through[call] as (...a: unknown[]) => unknown)(...args);
      assert.equal(await answer, call);
      assert.deepEqual(seen.at(-1), { call, args, receiver: docker });
    }
    assert.equal(seen.length, DOCKER_CALLS.length);
  });

  it('leaves a subclass its own calls and passes on the rest', async () => {
    const { docker, seen } = recordingDocker();
    const client = new VersionOnly(docker);
    assert.equal((await client.version()).Version, 'written');
    await client.ping();
    assert.deepEqual(
      seen.map((s) => s.call),
      ['ping'],
    );
  });

  it('fills only what a class does not write itself', () => {
    class Written extends PassThroughClient {
      override ping(): Promise<void> {
        return Promise.resolve();
      }
    }
    const own = Written.prototype.ping;
    const made: DockerCall[] = [];
    fillCalls(Written, (call) => {
      made.push(call);
      return () => call;
    });
    assert.equal(Written.prototype.ping, own);
    assert.deepEqual(
      made,
      DOCKER_CALLS.filter((c) => c !== 'ping'),
    );
  });

  it('has the instrumented client time and name every call but the event stream, which it counts on subscribing', async () => {
    const { docker, seen } = recordingDocker();
    const observed: string[] = [];
    const recorder: DockerCallRecorder = { observe: (call, seconds, kind) => (assert.ok(seconds >= 0), observed.push(`${call} ${kind ?? 'ok'}`)) };
    const instrumented = new InstrumentedDockerClient(docker, recorder);
    const answered = DOCKER_CALLS.filter((c) => c !== 'events');
    for (const call of answered) assert.equal(await (instrumented[call] as (...a: unknown[]) => unknown)('x'), call);
    assert.deepEqual(
      observed,
      answered.map((c) => `${c} ok`),
    );
    assert.deepEqual(
      seen.map((s) => [s.call, s.args, s.receiver]),
      answered.map((c) => [c, ['x'], docker]),
    );
  });
});
