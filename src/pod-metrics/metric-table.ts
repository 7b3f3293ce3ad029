// The metrics ListMetricDescriptors announces and ListPodSandboxMetrics fills in, each named once
// in one table: its name, kind, help, label keys, and how its values come from the figures read.
// Names, kinds and label keys are cAdvisor's, as containerd serves them, because kubelet turns
// each descriptor into a Prometheus metric of the same name and labels on /metrics/cadvisor and
// dashboards expect cAdvisor's series there. kubelet drops a metric whose name has no
// descriptor, and Prometheus rejects one whose label count differs from its descriptor's.
import type { MetricDescriptor } from '../cri/types';
import type { CgroupFigures, Limit } from '../cgroups/figures';
import type { InterfaceCounters } from '../cgroups/net-dev';
import type { BlockIoEntry, PressureLine } from '../cgroups/parse';
import type { ProcessFigures } from './proc-figures';

/** Every metric's first labels: pod name, pod namespace, container name, container ID, image. */
const BASE_LABEL_KEYS = ['pod', 'namespace', 'container', 'id', 'image'] as const;

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

type MetricKind = 'COUNTER' | 'GAUGE';

/** A value and its labels after the base ones; an undefined value was not read and is left out. */
type Sample = readonly [value: bigint | undefined, extraLabels: readonly string[]];

/** How a metric's values come from the figures: a container's reading, or each of a pod's interfaces. */
type MetricValues =
  | { readonly of: 'container'; samples(r: ContainerReading): readonly Sample[] }
  | { readonly of: 'interface'; value(i: InterfaceCounters): bigint | undefined };

export interface MetricSpec {
  readonly name: string;
  readonly help: string;
  readonly kind: MetricKind;
  /** Label keys after BASE_LABEL_KEYS. */
  readonly extraLabels: readonly string[];
  readonly values: MetricValues;
}

const metric = (name: string, kind: MetricKind, help: string, extraLabels: readonly string[], values: MetricValues): MetricSpec => ({ name, kind, help, extraLabels, values });
const container = (samples: (r: ContainerReading) => readonly Sample[]): MetricValues => ({ of: 'container', samples });
/** One value of the container, no extra labels. */
const one = (value: (r: ContainerReading) => bigint | undefined): MetricValues => container((r) => [[value(r), []]]);
/** One value per interface of the pod's network namespace, labelled with its name. */
const perInterface = (value: (i: InterfaceCounters) => bigint | undefined): MetricValues => ({ of: 'interface', value });
/** Of the filesystem holding the writable layer, labelled with its device. */
const ofLayer = (value: (l: LayerFigures) => bigint | undefined): MetricValues => container((r) => (r.layer ? [[value(r.layer), [r.layer.device]]] : []));
/** Per block device, labelled with its name (its numbers when unnamed), then the samples' own labels. */
const perDevice = (samples: (e: BlockIoEntry) => readonly Sample[]): MetricValues =>
  container((r) =>
    (r.cgroup.blockIo ?? []).flatMap((e) => {
      const numbers = `${e.major}:${e.minor}`;
      const device = r.deviceNames.get(numbers) ?? numbers;
      return samples(e).map(([value, extra]): Sample => [value, [device, ...extra]]);
    }),
  );

const NS_PER_S = 1_000_000_000n;
const USEC_PER_S = 1_000_000n;
/** CRI values are whole numbers, so second-valued counters are whole seconds (as containerd sends them). */
const seconds = (ns: bigint | undefined): bigint | undefined => (ns === undefined ? undefined : ns / NS_PER_S);
/** A PSI file's total (microseconds) as whole seconds: "waiting" is its some line, "stalled" its full. */
const psiSeconds = (line: PressureLine | undefined): bigint | undefined => (line === undefined ? undefined : line.totalUsec / USEC_PER_S);
/** cAdvisor reports no limit as 0. */
const limitOrZero = (l: Limit | undefined): bigint | undefined => (l === 'unlimited' ? 0n : l);

/** v1's memory-plus-swap limit (what cAdvisor reports), 0 when either has none. */
function memoryAndSwapLimit(memory: Limit | undefined, swap: Limit | undefined): bigint | undefined {
  if (memory === undefined || swap === undefined) return undefined;
  return memory === 'unlimited' || swap === 'unlimited' ? 0n : memory + swap;
}

const NET = ['interface'];
const DEV = ['device'];

/** The table: every metric, once, in the order ListMetricDescriptors gives them. */
export const METRICS: readonly MetricSpec[] = [
  // CPU
  metric('container_cpu_usage_seconds_total', 'COUNTER', 'CPU time the container has used, in whole seconds.', [], one((r) => seconds(r.cgroup.cpuUsageNs))),
  metric('container_cpu_user_seconds_total', 'COUNTER', 'CPU time spent in user mode, in whole seconds.', [], one((r) => seconds(r.cgroup.cpuUserNs))),
  metric('container_cpu_system_seconds_total', 'COUNTER', 'CPU time spent in kernel mode, in whole seconds.', [], one((r) => seconds(r.cgroup.cpuSystemNs))),
  metric('container_cpu_cfs_periods_total', 'COUNTER', 'CFS enforcement periods that have elapsed.', [], one((r) => r.cgroup.cfsPeriods)),
  metric('container_cpu_cfs_throttled_periods_total', 'COUNTER', 'CFS periods in which the container was throttled.', [], one((r) => r.cgroup.cfsThrottledPeriods)),
  metric('container_cpu_cfs_throttled_seconds_total', 'COUNTER', 'Time the container spent throttled, in whole seconds.', [], one((r) => seconds(r.cgroup.cfsThrottledNs))),
  // Memory
  metric('container_memory_usage_bytes', 'GAUGE', 'Memory charged to the container, page cache included, in bytes.', [], one((r) => r.cgroup.memoryUsageBytes)),
  metric('container_memory_max_usage_bytes', 'GAUGE', 'The highest memory usage recorded for the container, in bytes.', [], one((r) => r.cgroup.memoryPeakBytes)),
  metric('container_memory_working_set_bytes', 'GAUGE', 'Memory usage less inactive file cache, in bytes: what kubelet evicts on.', [], one((r) => r.cgroup.workingSetBytes)),
  metric('container_memory_rss', 'GAUGE', 'Anonymous memory (and swap cache) of the container, in bytes.', [], one((r) => r.cgroup.rssBytes)),
  metric('container_memory_cache', 'GAUGE', 'Page cache charged to the container, in bytes.', [], one((r) => r.cgroup.cacheBytes)),
  metric('container_memory_mapped_file', 'GAUGE', 'Memory-mapped file pages of the container, in bytes.', [], one((r) => r.cgroup.mappedFileBytes)),
  metric('container_memory_kernel_usage', 'GAUGE', 'Kernel memory charged to the container (stacks, slabs, socket buffers), in bytes.', [], one((r) => r.cgroup.kernelBytes)),
  metric('container_memory_swap', 'GAUGE', 'Swap used by the container, in bytes.', [], one((r) => r.cgroup.swapUsageBytes)),
  metric('container_memory_failcnt', 'COUNTER', 'Times the container\'s memory usage hit its limit.', [], one((r) => r.cgroup.memoryFailcnt)),
  metric('container_memory_total_active_file_bytes', 'GAUGE', 'File cache on the active LRU list, in bytes.', [], one((r) => r.cgroup.activeFileBytes)),
  metric('container_memory_total_inactive_file_bytes', 'GAUGE', 'File cache on the inactive LRU list, in bytes.', [], one((r) => r.cgroup.inactiveFileBytes)),
  metric('container_memory_failures_total', 'COUNTER', 'Page faults of the container, by kind (pgfault, pgmajfault) and scope.', ['failure_type', 'scope'], container((r) => [
    // The container's own cgroup, not its hierarchy: cAdvisor's "container" scope.
    [r.cgroup.pageFaults, ['pgfault', 'container']],
    [r.cgroup.majorPageFaults, ['pgmajfault', 'container']],
  ])),
  metric('container_oom_events_total', 'COUNTER', 'Processes of the container the OOM killer has killed.', [], one((r) => r.cgroup.oomKills)),
  // Network (pod level: the sandbox's namespace)
  metric('container_network_receive_bytes_total', 'COUNTER', 'Bytes received on the interface.', NET, perInterface((i) => i.rxBytes)),
  metric('container_network_receive_packets_total', 'COUNTER', 'Packets received on the interface.', NET, perInterface((i) => i.rxPackets)),
  metric('container_network_receive_packets_dropped_total', 'COUNTER', 'Received packets the interface dropped.', NET, perInterface((i) => i.rxDropped)),
  metric('container_network_receive_errors_total', 'COUNTER', 'Errors while receiving on the interface.', NET, perInterface((i) => i.rxErrors)),
  metric('container_network_transmit_bytes_total', 'COUNTER', 'Bytes sent on the interface.', NET, perInterface((i) => i.txBytes)),
  metric('container_network_transmit_packets_total', 'COUNTER', 'Packets sent on the interface.', NET, perInterface((i) => i.txPackets)),
  metric('container_network_transmit_packets_dropped_total', 'COUNTER', 'Packets the interface dropped while sending.', NET, perInterface((i) => i.txDropped)),
  metric('container_network_transmit_errors_total', 'COUNTER', 'Errors while sending on the interface.', NET, perInterface((i) => i.txErrors)),
  // Filesystem: the writable layer and the filesystem it lives on
  metric('container_fs_usage_bytes', 'GAUGE', 'Bytes the container\'s writable layer takes on the filesystem.', DEV, ofLayer((l) => l.usageBytes)),
  metric('container_fs_limit_bytes', 'GAUGE', 'Size of the filesystem holding the writable layer, in bytes.', DEV, ofLayer((l) => l.limitBytes)),
  metric('container_fs_inodes_total', 'GAUGE', 'Inodes of the filesystem holding the writable layer.', DEV, ofLayer((l) => l.inodesTotal)),
  metric('container_fs_inodes_free', 'GAUGE', 'Free inodes of the filesystem holding the writable layer.', DEV, ofLayer((l) => l.inodesFree)),
  // Block I/O, per device
  metric('container_fs_reads_bytes_total', 'COUNTER', 'Bytes the container read from the block device.', DEV, perDevice((e) => [[e.readBytes, []]])),
  metric('container_fs_reads_total', 'COUNTER', 'Read requests the container completed on the block device.', DEV, perDevice((e) => [[e.reads, []]])),
  metric('container_fs_writes_bytes_total', 'COUNTER', 'Bytes the container wrote to the block device.', DEV, perDevice((e) => [[e.writeBytes, []]])),
  metric('container_fs_writes_total', 'COUNTER', 'Write requests the container completed on the block device.', DEV, perDevice((e) => [[e.writes, []]])),
  metric('container_blkio_device_usage_total', 'COUNTER', 'Bytes moved to or from the block device, by operation.', [...DEV, 'major', 'minor', 'operation'], perDevice((e) => [
    [e.readBytes, [String(e.major), String(e.minor), 'Read']],
    [e.writeBytes, [String(e.major), String(e.minor), 'Write']],
  ])),
  // Processes
  metric('container_processes', 'GAUGE', 'Processes in the container.', [], one((r) => r.processes?.processes)),
  // cAdvisor's container_threads is pids.current, the process count.
  metric('container_threads', 'GAUGE', 'Threads in the container.', [], one((r) => r.cgroup.processCount)),
  metric('container_threads_max', 'GAUGE', 'The container\'s limit on threads; 0 means no limit.', [], one((r) => limitOrZero(r.cgroup.processLimit))),
  metric('container_file_descriptors', 'GAUGE', 'File descriptors the container\'s processes hold open.', [], one((r) => r.processes?.fileDescriptors)),
  metric('container_sockets', 'GAUGE', 'Sockets the container\'s processes hold open.', [], one((r) => r.processes?.sockets)),
  // Pressure stall information (cgroup v2): "waiting" is PSI's some, "stalled" its full
  metric('container_pressure_cpu_waiting_seconds_total', 'COUNTER', 'Time tasks of the container waited for a CPU, in whole seconds.', [], one((r) => psiSeconds(r.cgroup.cpuPressure?.some))),
  metric('container_pressure_cpu_stalled_seconds_total', 'COUNTER', 'Time no task of the container could make progress for want of a CPU, in whole seconds.', [], one((r) => psiSeconds(r.cgroup.cpuPressure?.full))),
  metric('container_pressure_memory_waiting_seconds_total', 'COUNTER', 'Time tasks of the container waited for memory, in whole seconds.', [], one((r) => psiSeconds(r.cgroup.memoryPressure?.some))),
  metric('container_pressure_memory_stalled_seconds_total', 'COUNTER', 'Time no task of the container could make progress for want of memory, in whole seconds.', [], one((r) => psiSeconds(r.cgroup.memoryPressure?.full))),
  metric('container_pressure_io_waiting_seconds_total', 'COUNTER', 'Time tasks of the container waited for I/O, in whole seconds.', [], one((r) => psiSeconds(r.cgroup.ioPressure?.some))),
  metric('container_pressure_io_stalled_seconds_total', 'COUNTER', 'Time no task of the container could make progress for want of I/O, in whole seconds.', [], one((r) => psiSeconds(r.cgroup.ioPressure?.full))),
  // Times
  metric('container_last_seen', 'GAUGE', 'When the runtime last read the container, in seconds since the epoch.', [], one((r) => r.seenAt)),
  metric('container_start_time_seconds', 'GAUGE', 'When the container started, in seconds since the epoch.', [], one((r) => r.startedAt)),
  // Limits the container was given, as the kernel holds them
  metric('container_spec_cpu_period', 'GAUGE', 'CFS period of the container, in microseconds.', [], one((r) => r.cgroup.cpuPeriodUs)),
  metric('container_spec_cpu_quota', 'GAUGE', 'CFS quota of the container per period, in microseconds; absent without a quota.', [], one((r) => r.cgroup.cpuQuotaUs)),
  metric('container_spec_cpu_shares', 'GAUGE', 'CPU shares (relative weight) of the container.', [], one((r) => r.cgroup.cpuShares)),
  metric('container_spec_memory_limit_bytes', 'GAUGE', 'Memory limit of the container in bytes; 0 means no limit.', [], one((r) => limitOrZero(r.cgroup.memoryLimitBytes))),
  metric('container_spec_memory_reservation_limit_bytes', 'GAUGE', 'Memory the container is guaranteed under pressure (soft limit), in bytes; 0 means none.', [], one((r) => limitOrZero(r.cgroup.memoryReservationBytes))),
  metric('container_spec_memory_swap_limit_bytes', 'GAUGE', 'Limit on memory plus swap of the container in bytes; 0 means no limit.', [], one((r) => memoryAndSwapLimit(r.cgroup.memoryLimitBytes, r.cgroup.swapLimitBytes))),
];

/** The label keys of a metric, as its descriptor lists them. */
function labelKeysOf(s: MetricSpec): string[] {
  return [...BASE_LABEL_KEYS, ...s.extraLabels];
}

/** What ListMetricDescriptors answers. */
export function metricDescriptors(): MetricDescriptor[] {
  return METRICS.map((s) => ({ name: s.name, help: s.help, labelKeys: labelKeysOf(s) }));
}
