// Figures read from the kernel turned into CRI Metric messages. Pure. Each metric carries its
// descriptor's base labels (pod, namespace, container, id, image) and then its own extra ones,
// so the label count always matches the descriptor. A figure that was not read is left out:
// kubelet would otherwise show a 0 it never measured.
import type { Metric } from '../cri/types';
import { u64 } from '../cri/u64';
import { METRICS, type MetricKey } from './descriptors';
import type { CgroupFigures, Limit } from '../cgroups/figures';
import type { InterfaceCounters } from '../cgroups/net-dev';
import type { BlockIoEntry, Pressure } from '../cgroups/parse';
import type { ProcessFigures } from './proc-figures';

export interface BaseLabels {
  pod: string;
  namespace: string;
  /** Empty for pod-level metrics. */
  container: string;
  /** The container's ID, or for pod-level metrics the sandbox's. */
  id: string;
  /** Empty for pod-level metrics. */
  image: string;
}

export interface LayerFigures {
  /** The filesystem holding the writable layer, as a device label. */
  device: string;
  usageBytes?: bigint;
  limitBytes?: bigint;
  inodesTotal?: bigint;
  inodesFree?: bigint;
}

export interface ContainerReading {
  labels: BaseLabels;
  cgroup: CgroupFigures;
  processes: ProcessFigures | undefined;
  layer: LayerFigures | undefined;
  /** Seconds since the epoch. */
  startedAt: bigint | undefined;
  seenAt: bigint;
  /** "<major>:<minor>" → device name for block I/O labels. */
  deviceNames: ReadonlyMap<string, string>;
}

const NS_PER_S = 1_000_000_000n;

export class MetricList {
  readonly metrics: Metric[] = [];
  constructor(private readonly base: readonly string[]) {}

  /**
   * Adds the metric unless its value was not read. No timestamp (0 on the wire): these are
   * live readings, for which the CRI asks for 0 and kubelet lets Prometheus stamp the scrape.
   */
  add(key: MetricKey, value: bigint | undefined, extra: readonly string[] = []): void {
    if (value === undefined) return;
    const s = METRICS[key];
    if (extra.length !== s.extraLabels.length) throw new Error(`${s.name} takes ${s.extraLabels.length} extra labels, given ${extra.length}`);
    this.metrics.push({ name: s.name, metricType: s.kind, labelValues: [...this.base, ...extra], value: u64(value < 0n ? 0n : value) });
  }
}

const baseValues = (l: BaseLabels): string[] => [l.pod, l.namespace, l.container, l.id, l.image];
const seconds = (ns: bigint | undefined): bigint | undefined => (ns === undefined ? undefined : ns / NS_PER_S);
const USEC_PER_S = 1_000_000n;

/** cAdvisor reports no limit as 0. */
const limitOrZero = (l: Limit | undefined): bigint | undefined => (l === 'unlimited' ? 0n : l);

/** v1's memory-plus-swap limit (what cAdvisor reports), 0 when either has none. */
function memoryAndSwapLimit(memory: Limit | undefined, swap: Limit | undefined): bigint | undefined {
  if (memory === undefined || swap === undefined) return undefined;
  return memory === 'unlimited' || swap === 'unlimited' ? 0n : memory + swap;
}

/** A PSI file's totals (microseconds) as whole seconds: "waiting" is some, "stalled" full. */
function addPressure(out: MetricList, p: Pressure | undefined, waiting: MetricKey, stalled: MetricKey): void {
  const s = (usec: bigint | undefined): bigint | undefined => (usec === undefined ? undefined : usec / USEC_PER_S);
  out.add(waiting, s(p?.some?.totalUsec));
  out.add(stalled, s(p?.full?.totalUsec));
}

function addBlockIo(out: MetricList, entries: readonly BlockIoEntry[], names: ReadonlyMap<string, string>): void {
  for (const e of entries) {
    const key = `${e.major}:${e.minor}`;
    const device = names.get(key) ?? key;
    out.add('fsReadsBytes', e.readBytes, [device]);
    out.add('fsWritesBytes', e.writeBytes, [device]);
    out.add('fsReads', e.reads, [device]);
    out.add('fsWrites', e.writes, [device]);
    const numbers = [device, String(e.major), String(e.minor)];
    out.add('blkioDeviceUsage', e.readBytes, [...numbers, 'Read']);
    out.add('blkioDeviceUsage', e.writeBytes, [...numbers, 'Write']);
  }
}

/** A running container's metrics. */
export function containerMetricsOf(r: ContainerReading): Metric[] {
  const out = new MetricList(baseValues(r.labels));
  const c = r.cgroup;
  // CRI values are whole numbers, so second-valued counters are whole seconds (as containerd sends them).
  out.add('cpuUsage', seconds(c.cpuUsageNs));
  out.add('cpuUser', seconds(c.cpuUserNs));
  out.add('cpuSystem', seconds(c.cpuSystemNs));
  out.add('cfsPeriods', c.cfsPeriods);
  out.add('cfsThrottledPeriods', c.cfsThrottledPeriods);
  out.add('cfsThrottledSeconds', seconds(c.cfsThrottledNs));
  out.add('memoryUsage', c.memoryUsageBytes);
  out.add('memoryMaxUsage', c.memoryPeakBytes);
  out.add('memoryWorkingSet', c.workingSetBytes);
  out.add('memoryRss', c.rssBytes);
  out.add('memoryCache', c.cacheBytes);
  out.add('memoryMappedFile', c.mappedFileBytes);
  out.add('memoryKernel', c.kernelBytes);
  out.add('memorySwap', c.swapUsageBytes);
  out.add('memoryFailcnt', c.memoryFailcnt);
  out.add('memoryActiveFile', c.activeFileBytes);
  out.add('memoryInactiveFile', c.inactiveFileBytes);
  // The container's own cgroup, not its hierarchy: cAdvisor's "container" scope.
  out.add('memoryFailures', c.pageFaults, ['pgfault', 'container']);
  out.add('memoryFailures', c.majorPageFaults, ['pgmajfault', 'container']);
  out.add('oomEvents', c.oomKills);
  // cAdvisor's container_threads is pids.current, the process count.
  out.add('threads', c.processCount);
  out.add('threadsMax', limitOrZero(c.processLimit));
  out.add('processes', r.processes?.processes);
  out.add('fileDescriptors', r.processes?.fileDescriptors);
  out.add('sockets', r.processes?.sockets);
  out.add('specCpuPeriod', c.cpuPeriodUs);
  out.add('specCpuQuota', c.cpuQuotaUs);
  out.add('specCpuShares', c.cpuShares);
  out.add('specMemoryLimit', limitOrZero(c.memoryLimitBytes));
  out.add('specMemoryReservation', limitOrZero(c.memoryReservationBytes));
  out.add('specMemorySwapLimit', memoryAndSwapLimit(c.memoryLimitBytes, c.swapLimitBytes));
  addBlockIo(out, c.blockIo ?? [], r.deviceNames);
  addPressure(out, c.cpuPressure, 'cpuWaiting', 'cpuStalled');
  addPressure(out, c.memoryPressure, 'memoryWaiting', 'memoryStalled');
  addPressure(out, c.ioPressure, 'ioWaiting', 'ioStalled');
  if (r.layer) {
    const d = [r.layer.device];
    out.add('fsUsage', r.layer.usageBytes, d);
    out.add('fsLimit', r.layer.limitBytes, d);
    out.add('fsInodesTotal', r.layer.inodesTotal, d);
    out.add('fsInodesFree', r.layer.inodesFree, d);
  }
  out.add('startTime', r.startedAt);
  out.add('lastSeen', r.seenAt);
  return out.metrics;
}

/** The pod's network metrics, one set per interface of its namespace; the id label is the sandbox's. */
export function podNetworkMetricsOf(pod: { name: string; namespace: string; sandboxId: string }, interfaces: readonly InterfaceCounters[]): Metric[] {
  const out = new MetricList(baseValues({ pod: pod.name, namespace: pod.namespace, container: '', id: pod.sandboxId, image: '' }));
  for (const i of interfaces) {
    const n = [i.name];
    out.add('netRxBytes', i.rxBytes, n);
    out.add('netRxPackets', i.rxPackets, n);
    out.add('netRxDropped', i.rxDropped, n);
    out.add('netRxErrors', i.rxErrors, n);
    out.add('netTxBytes', i.txBytes, n);
    out.add('netTxPackets', i.txPackets, n);
    out.add('netTxDropped', i.txDropped, n);
    out.add('netTxErrors', i.txErrors, n);
  }
  return out.metrics;
}
