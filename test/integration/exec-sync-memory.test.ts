// ExecSync's output held once and bounded as a whole (issue 42): 20 probes at once, each printing
// 20 MB, must not take the shim's memory far past one capped answer each, and the memory must be
// given back once they are answered. Before: 75 -> 810 MiB, still 291 MiB 30 s later (issue 42);
// +612 MiB at the peak and +255 MiB 60 s after, measured here on 20.10 before the change.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { memoryBytes } from '../../bench/procfs';
import { EXEC_OUTPUT_BUDGET } from '../../src/shim/container/support/capped-output';
import { useShim } from '../support/fixture';
import { criClient } from '../support/client';
import { busybox, runContainer } from '../support/pods';
import { waitFor } from '../support/poll';

const MiB = 1024 * 1024;
const CALLS = 20;
const PRINTED = 20_000_000;
/** The bound on the peak growth. */
const PEAK_GROWTH_BOUND = 400 * MiB;
/**
 * How far above its start the shim may be 60 s after: "back" (the issue). On Node 24 it came
 * back to +1.6 MiB 5 s after the answers and stayed within -15..+16 MiB (2026-12-02; before the
 * heap trim heard the answers written out, 60 to 124 MiB stayed); Node 20 came back to within 25.
 */
const SETTLED_GROWTH_BOUND = 32 * MiB;
const fmt = (b: number): string => `${(b / MiB).toFixed(1)} MiB`;

describe('ExecSync output', () => {
  const f = useShim({ pod: 'exec-output' });
  let id: string;

  before(async () => {
    id = await runContainer(f.client, f.pod, busybox(f.run, 'printer', { command: ['sleep', '3600'] }));
  });

  it(`${CALLS} ExecSyncs at once printing ${PRINTED / 1e6} MB each: answered within the cap, peak growth under ${fmt(PEAK_GROWTH_BOUND)}, back under +${fmt(SETTLED_GROWTH_BOUND)} within 60 s`, async () => {
    const pid = f.shim.child.pid!;
    // kubelet's limit on an answer, as the shim's.
    const client = criClient(f.shim.address, { 'grpc.max_receive_message_length': 16 * MiB });
    // One small call first, so what a first exec loads is not counted as the burst's.
    await f.client.runtime.ExecSync({ containerId: id, cmd: ['true'], timeout: 20 });
    const start = memoryBytes(pid);
    let peak = start;
    const sampler = setInterval(() => (peak = Math.max(peak, memoryBytes(pid))), 20);
    let answers;
    try {
      answers = await Promise.all(
        Array.from({ length: CALLS }, () => client.runtime.ExecSync({ containerId: id, cmd: ['head', '-c', String(PRINTED), '/dev/zero'], timeout: 120 })),
      );
    } finally {
      clearInterval(sampler);
      client.close();
    }
    let kept = 0;
    for (const a of answers) {
      assert.equal(a.exitCode, 0);
      assert.ok(a.stdout.length <= EXEC_OUTPUT_BUDGET, `stdout of ${a.stdout.length} bytes`);
      assert.ok(a.stdout.every((b) => b === 0), 'stdout is what the command printed');
      assert.match(a.stderr.toString(), /bytes of stdout were dropped/);
      kept += a.stdout.length;
    }
    const answeredAt = Date.now();
    let now = memoryBytes(pid);
    const settled = SETTLED_GROWTH_BOUND;
    await waitFor('the shim to give the memory back', () => (now = memoryBytes(pid)) - start < settled, { timeoutMs: 60_000, intervalMs: 500 }).catch(() => undefined);
    console.log(
      `ExecSync burst: ${CALLS} x ${PRINTED / 1e6} MB, ${fmt(kept)} answered; shim VmRSS ${fmt(start)} -> peak ${fmt(peak)} (+${fmt(peak - start)}) -> ${fmt(now)} (+${fmt(now - start)}) ${((Date.now() - answeredAt) / 1000).toFixed(1)} s after`,
    );
    assert.ok(peak - start < PEAK_GROWTH_BOUND, `the burst grew the shim by ${fmt(peak - start)}`);
    assert.ok(now - start < settled, `60 s after, the shim still held ${fmt(now - start)} more (peak +${fmt(peak - start)})`);
  });
});
