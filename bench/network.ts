// Part: pod network set-up and tear-down. RunPodSandbox and StopPodSandbox through a shim on a
// CNI network (Debian's bridge, portmap and firewall plugins, on a network of the bench's own)
// next to the same calls through a shim on Docker's bridge (the no-op plugin): what the CNI
// plugins cost a pod. The two shims take turns, round by round.
import type { CriClient } from '../test/support/client';
import { makeTestNetwork } from '../test/support/cni-network';
import { startShim } from '../test/support/shim';
import { type LatencyRow } from './report';
import { ratio, summarize } from './stats';
import { type BenchRun, podConfig, timed } from './workload';

export const NETWORK_CALLS = ['RunPodSandbox', 'StopPodSandbox'] as const;

async function podRound(client: CriClient, bench: BenchRun, name: string, out: { run: number[]; stop: number[] } | undefined): Promise<void> {
  const config = podConfig(bench, name);
  const run = await timed(() => client.runtime.RunPodSandbox({ config }));
  const stop = await timed(() => client.runtime.StopPodSandbox({ podSandboxId: run.value.podSandboxId }));
  await client.runtime.RemovePodSandbox({ podSandboxId: run.value.podSandboxId });
  out?.run.push(run.ms);
  out?.stop.push(stop.ms);
}

/** Rows of RunPodSandbox and StopPodSandbox on CNI (the "shim" side) against Docker's bridge (the reference). */
export async function measurePodNetwork(bench: BenchRun, shimArgs: readonly string[], rounds: number, warmup: number): Promise<LatencyRow[]> {
  const net = makeTestNetwork();
  const cni = await startShim({ args: [...shimArgs, ...net.shimArgs] });
  const bridge = await startShim({ args: [...shimArgs] });
  const samples = { cni: { run: [] as number[], stop: [] as number[] }, bridge: { run: [] as number[], stop: [] as number[] } };
  try {
    for (let i = 0; i < warmup + rounds; i++) {
      const keep = i >= warmup;
      await podRound(cni.client, bench, `net-cni-${i}`, keep ? samples.cni : undefined);
      await podRound(bridge.client, bench, `net-bridge-${i}`, keep ? samples.bridge : undefined);
    }
  } finally {
    await cni.stop();
    await bridge.stop();
    net.remove();
  }
  const row = (call: string, shim: number[], raw: number[]): LatencyRow => {
    const s = summarize(shim);
    const r = summarize(raw);
    return { call: `${call} on cni (bridge, portmap, firewall)`, rawCall: `${call} on Docker's bridge`, shim: s, raw: r, ratioP50: ratio(s.p50, r.p50) };
  };
  return [row('RunPodSandbox', samples.cni.run, samples.bridge.run), row('StopPodSandbox', samples.cni.stop, samples.bridge.stop)];
}
