// Measures (does not assert on time) ListContainerStats over 20 running containers against
// Docker's own stats endpoint asked for each of them, one after another and all at once.
// The figures are printed as test diagnostics; the assertions are about what was returned.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { TEST_LABEL } from '../support/cleanup';
import { dockerApi } from '../support/images';
import { useShim } from '../support/fixture';
import { SLEEP_FOREVER } from '../support/pods';

const CONTAINERS = 20;

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('stats figures at 20 containers (measured, not asserted)', () => {
  const f = useShim({ pod: 'stats-measure' });
  const { run } = f;
  const ids: string[] = [];

  before(async () => {
    for (let i = 0; i < CONTAINERS; i++) ids.push(await f.runContainer(`c${i}`, SLEEP_FOREVER));
  });

  it('ListContainerStats vs Docker /containers/<id>/stats?stream=false', async (t) => {
    const filter = { labelSelector: { [TEST_LABEL]: run } };
    const list = () => f.client.runtime.ListContainerStats({ filter });
    const cold = await timed(list);
    assert.equal(cold.value.stats.length, CONTAINERS);
    const warm: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await timed(list);
      assert.equal(r.value.stats.length, CONTAINERS);
      for (const s of r.value.stats) assert.ok(Number(s.cpu!.usageCoreNanoSeconds!.value) > 0);
      warm.push(r.ms);
    }
    const pods = await timed(() => f.client.runtime.ListPodSandboxStats({ filter }));
    assert.equal(pods.value.stats[0]!.linux!.containers!.length, CONTAINERS);

    const docker = dockerApi();
    const one = (id: string) => docker.getContainer(id).stats({ stream: false });
    // Each call waits for a second sample (about 1-2 s), so one after another is timed on a
    // few containers and given per call.
    const SEQUENTIAL = 5;
    const sequential = await timed(async () => {
      for (const id of ids.slice(0, SEQUENTIAL)) await one(id);
    });
    const parallel = await timed(() => Promise.all(ids.map(one)));

    const figures = {
      listContainerStatsColdMs: cold.ms.toFixed(1),
      listContainerStatsWarmMedianMs: median(warm).toFixed(1),
      listPodSandboxStatsMs: pods.ms.toFixed(1),
      dockerStatsSequentialPerCallMs: (sequential.ms / SEQUENTIAL).toFixed(1),
      dockerStatsParallelMs: parallel.ms.toFixed(1),
    };
    t.diagnostic(`stats figures, ${CONTAINERS} containers: ${JSON.stringify(figures)}`);
    console.log(`stats figures, ${CONTAINERS} containers: ${JSON.stringify(figures)}`);
  });
});
