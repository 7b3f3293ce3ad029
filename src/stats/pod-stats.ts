// One pod's PodSandboxStats from its cgroup files. A pod's CPU, memory and process figures
// are its own cgroup's when it has one (a cgroup parent, as kubelet always gives), else the sum
// of its pause container and its running containers; its network counters are those of the
// pause process's namespace.
import type { PodSandboxStats } from '../cri/types';
import type { ShimObject } from '../object-store/shim-objects';
import { nowNanos } from '../util/time';
import type { CgroupFigures } from '../cgroups/figures';
import type { StatsCollector } from './stats-collector';
import { u64 } from '../cri/u64';
import { cpuUsage, ioUsage, memoryUsage, sumFigures } from './stats-convert';

export async function podSandboxStatsOf(
  collector: StatsCollector,
  pause: ShimObject,
  members: readonly ShimObject[],
  signal: AbortSignal,
): Promise<PodSandboxStats> {
  signal.throwIfAborted();
  const [own, figures] = await Promise.all([
    collector.sandboxFigures(pause, signal),
    Promise.all(members.map((c) => collector.containerFigures(c, signal))),
  ]);
  const present = figures.filter((f): f is NonNullable<typeof f> => f !== undefined);
  const samples = [own.sample, ...present.map((f) => f.sample)].filter((s): s is CgroupFigures => s !== undefined);
  const total = own.sample ? (own.podSample ?? sumFigures(samples)) : undefined;
  const timestamp = nowNanos();
  const key = `pod:${pause.id}`;
  const nanoCores = total?.cpuUsageNs === undefined ? undefined : collector.rates.rate(key, total.cpuUsageNs, process.hrtime.bigint());
  if (!total) collector.rates.forget(key);
  const linux: NonNullable<PodSandboxStats['linux']> = {
    cpu: cpuUsage(total, nanoCores, timestamp),
    memory: memoryUsage(total, timestamp),
    process: { timestamp, processCount: u64(total?.processCount ?? 0n) },
    containers: present.map((f) => f.stats),
  };
  if (own.network) linux.network = own.network;
  const io = ioUsage(total, timestamp);
  if (io) linux.io = io;
  return { attributes: collector.podAttributes(pause), linux };
}
