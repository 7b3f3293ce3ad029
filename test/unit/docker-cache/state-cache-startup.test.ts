// The state cache while its first sync is still running, as it is when the shim already
// answers: reads go to Docker, and a stop does not wait for inspects that do not come back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DockerClient, EventsOptions } from '../../../src/docker/client';
import type { ContainerInspect, ContainerSummary, DockerEvent, DockerFilters } from '../../../src/docker/types';
import { CachingDockerClient } from '../../../src/docker-cache/caching-client';
import { DockerStateCache } from '../../../src/docker-cache/state-cache';
import { silentLogger } from '../../../src/util/logger';
import { waitFor } from '../../support/poll';

const TYPE = 'io.kubernetes.docker.type';
const SLOW = 'a'.repeat(64);
const QUICK = 'b'.repeat(64);

function doc(id: string): ContainerInspect {
  return {
    Id: id,
    Name: `/k8s_c_${id.slice(0, 4)}_ns_uid_0`,
    Created: '2026-11-22T02:33:51.889293387Z',
    Image: 'sha256:1111',
    State: { Status: 'running', Running: true, StartedAt: '2026-11-22T02:33:52Z', FinishedAt: '0001-01-01T00:00:00Z' },
    Config: { Image: 'busybox', Labels: { [TYPE]: 'container' } },
  } as unknown as ContainerInspect;
}

/** Two shim containers; inspecting SLOW waits until the test lets it answer. */
class SlowDocker implements Partial<DockerClient> {
  readonly endpoint = 'slow';
  readonly calls: string[] = [];
  private release: () => void = () => undefined;
  private readonly released = new Promise<void>((r) => (this.release = r));

  async listContainers(query: { all: boolean; filters?: DockerFilters }): Promise<ContainerSummary[]> {
    this.calls.push(`list ${JSON.stringify(query.filters ?? {})}`);
    return [{ Id: SLOW }, { Id: QUICK }] as ContainerSummary[];
  }

  async inspectContainer(id: string): Promise<ContainerInspect> {
    this.calls.push(`inspect ${id.slice(0, 4)}`);
    if (id === SLOW) await this.released;
    return doc(id);
  }

  events(_query: object, opts?: EventsOptions): AsyncIterable<DockerEvent> {
    return (async function* () {
      opts?.onSubscribed?.();
      await new Promise<void>((resolve) => {
        if (opts?.signal?.aborted) return resolve();
        opts?.signal?.addEventListener('abort', () => resolve(), { once: true });
      });
    })();
  }

  answerSlowInspects(): void {
    this.release();
  }
}

describe('the state cache during its first sync', () => {
  it('sends reads to Docker until synced, and stops without waiting for the sync', async () => {
    const docker = new SlowDocker();
    const raw = docker as unknown as DockerClient;
    const cache = new DockerStateCache(raw, silentLogger(), { initialMs: 5, maxMs: 20, subscribeTimeoutMs: 1_000 });
    const client = new CachingDockerClient(raw, cache);
    void cache.start();
    await waitFor('the resync to inspect both containers', () => docker.calls.includes('inspect aaaa') && docker.calls.includes('inspect bbbb'));
    assert.equal(cache.synced, false);

    const lists = docker.calls.filter((c) => c.startsWith('list')).length;
    const listed = await client.listContainers({ all: true, filters: { label: [`${TYPE}=container`] } });
    assert.equal(docker.calls.filter((c) => c.startsWith('list')).length, lists + 1, 'the list went to Docker');
    assert.deepEqual(
      listed.map((c) => c.Id),
      [SLOW, QUICK],
    );
    const inspects = docker.calls.length;
    assert.equal((await client.inspectContainer(QUICK)).Id, QUICK);
    assert.deepEqual(docker.calls.slice(inspects), ['inspect bbbb'], 'the inspect went to Docker although the cache holds it');

    let stopped = false;
    const stopping = cache.stop().then(() => (stopped = true));
    await waitFor('the stop to finish while an inspect is outstanding', () => stopped, { timeoutMs: 2_000 });
    assert.equal(cache.synced, false);
    docker.answerSlowInspects();
    await stopping;
  });
});
