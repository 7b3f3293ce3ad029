// The metrics ListMetricDescriptors announces and ListPodSandboxMetrics fills in. Names, kinds
// and label keys are cAdvisor's, as containerd serves them, because kubelet turns each
// descriptor into a Prometheus metric of the same name and labels on /metrics/cadvisor and
// dashboards expect cAdvisor's series there. kubelet drops a metric whose name has no
// descriptor, and Prometheus rejects one whose label count differs from its descriptor's.
import type { MetricDescriptor } from '../cri/types';

/** Every metric's first labels: pod name, pod namespace, container name, container ID, image. */
export const BASE_LABEL_KEYS = ['pod', 'namespace', 'container', 'id', 'image'] as const;

export type MetricKind = 'COUNTER' | 'GAUGE';

export interface MetricSpec {
  readonly name: string;
  readonly help: string;
  readonly kind: MetricKind;
  /** Label keys after BASE_LABEL_KEYS. */
  readonly extraLabels: readonly string[];
}

const spec = (name: string, kind: MetricKind, help: string, extraLabels: readonly string[] = []): MetricSpec => ({ name, kind, help, extraLabels });
const NET = ['interface'];
const DEV = ['device'];

/** Keyed by what the code calls each figure; the values are the wire names. */
export const METRICS = {
  // CPU
  cpuUsage: spec('container_cpu_usage_seconds_total', 'COUNTER', 'CPU time the container has used, in whole seconds.'),
  cpuUser: spec('container_cpu_user_seconds_total', 'COUNTER', 'CPU time spent in user mode, in whole seconds.'),
  cpuSystem: spec('container_cpu_system_seconds_total', 'COUNTER', 'CPU time spent in kernel mode, in whole seconds.'),
  cfsPeriods: spec('container_cpu_cfs_periods_total', 'COUNTER', 'CFS enforcement periods that have elapsed.'),
  cfsThrottledPeriods: spec('container_cpu_cfs_throttled_periods_total', 'COUNTER', 'CFS periods in which the container was throttled.'),
  cfsThrottledSeconds: spec('container_cpu_cfs_throttled_seconds_total', 'COUNTER', 'Time the container spent throttled, in whole seconds.'),
  // Memory
  memoryUsage: spec('container_memory_usage_bytes', 'GAUGE', 'Memory charged to the container, page cache included, in bytes.'),
  memoryMaxUsage: spec('container_memory_max_usage_bytes', 'GAUGE', 'The highest memory usage recorded for the container, in bytes.'),
  memoryWorkingSet: spec('container_memory_working_set_bytes', 'GAUGE', 'Memory usage less inactive file cache, in bytes: what kubelet evicts on.'),
  memoryRss: spec('container_memory_rss', 'GAUGE', 'Anonymous memory (and swap cache) of the container, in bytes.'),
  memoryCache: spec('container_memory_cache', 'GAUGE', 'Page cache charged to the container, in bytes.'),
  memoryMappedFile: spec('container_memory_mapped_file', 'GAUGE', 'Memory-mapped file pages of the container, in bytes.'),
  memoryKernel: spec('container_memory_kernel_usage', 'GAUGE', 'Kernel memory charged to the container (stacks, slabs, socket buffers), in bytes.'),
  memorySwap: spec('container_memory_swap', 'GAUGE', 'Swap used by the container, in bytes.'),
  memoryFailcnt: spec('container_memory_failcnt', 'COUNTER', 'Times the container\'s memory usage hit its limit.'),
  memoryActiveFile: spec('container_memory_total_active_file_bytes', 'GAUGE', 'File cache on the active LRU list, in bytes.'),
  memoryInactiveFile: spec('container_memory_total_inactive_file_bytes', 'GAUGE', 'File cache on the inactive LRU list, in bytes.'),
  memoryFailures: spec('container_memory_failures_total', 'COUNTER', 'Page faults of the container, by kind (pgfault, pgmajfault) and scope.', ['failure_type', 'scope']),
  oomEvents: spec('container_oom_events_total', 'COUNTER', 'Processes of the container the OOM killer has killed.'),
  // Network (pod level: the sandbox's namespace)
  netRxBytes: spec('container_network_receive_bytes_total', 'COUNTER', 'Bytes received on the interface.', NET),
  netRxPackets: spec('container_network_receive_packets_total', 'COUNTER', 'Packets received on the interface.', NET),
  netRxDropped: spec('container_network_receive_packets_dropped_total', 'COUNTER', 'Received packets the interface dropped.', NET),
  netRxErrors: spec('container_network_receive_errors_total', 'COUNTER', 'Errors while receiving on the interface.', NET),
  netTxBytes: spec('container_network_transmit_bytes_total', 'COUNTER', 'Bytes sent on the interface.', NET),
  netTxPackets: spec('container_network_transmit_packets_total', 'COUNTER', 'Packets sent on the interface.', NET),
  netTxDropped: spec('container_network_transmit_packets_dropped_total', 'COUNTER', 'Packets the interface dropped while sending.', NET),
  netTxErrors: spec('container_network_transmit_errors_total', 'COUNTER', 'Errors while sending on the interface.', NET),
  // Filesystem: the writable layer and the filesystem it lives on
  fsUsage: spec('container_fs_usage_bytes', 'GAUGE', 'Bytes the container\'s writable layer takes on the filesystem.', DEV),
  fsLimit: spec('container_fs_limit_bytes', 'GAUGE', 'Size of the filesystem holding the writable layer, in bytes.', DEV),
  fsInodesTotal: spec('container_fs_inodes_total', 'GAUGE', 'Inodes of the filesystem holding the writable layer.', DEV),
  fsInodesFree: spec('container_fs_inodes_free', 'GAUGE', 'Free inodes of the filesystem holding the writable layer.', DEV),
  // Block I/O, per device
  fsReadsBytes: spec('container_fs_reads_bytes_total', 'COUNTER', 'Bytes the container read from the block device.', DEV),
  fsReads: spec('container_fs_reads_total', 'COUNTER', 'Read requests the container completed on the block device.', DEV),
  fsWritesBytes: spec('container_fs_writes_bytes_total', 'COUNTER', 'Bytes the container wrote to the block device.', DEV),
  fsWrites: spec('container_fs_writes_total', 'COUNTER', 'Write requests the container completed on the block device.', DEV),
  blkioDeviceUsage: spec('container_blkio_device_usage_total', 'COUNTER', 'Bytes moved to or from the block device, by operation.', [...DEV, 'major', 'minor', 'operation']),
  // Processes
  processes: spec('container_processes', 'GAUGE', 'Processes in the container.'),
  threads: spec('container_threads', 'GAUGE', 'Threads in the container.'),
  threadsMax: spec('container_threads_max', 'GAUGE', 'The container\'s limit on threads; 0 means no limit.'),
  fileDescriptors: spec('container_file_descriptors', 'GAUGE', 'File descriptors the container\'s processes hold open.'),
  sockets: spec('container_sockets', 'GAUGE', 'Sockets the container\'s processes hold open.'),
  // Pressure stall information (cgroup v2): "waiting" is PSI's some, "stalled" its full
  cpuWaiting: spec('container_pressure_cpu_waiting_seconds_total', 'COUNTER', 'Time tasks of the container waited for a CPU, in whole seconds.'),
  cpuStalled: spec('container_pressure_cpu_stalled_seconds_total', 'COUNTER', 'Time no task of the container could make progress for want of a CPU, in whole seconds.'),
  memoryWaiting: spec('container_pressure_memory_waiting_seconds_total', 'COUNTER', 'Time tasks of the container waited for memory, in whole seconds.'),
  memoryStalled: spec('container_pressure_memory_stalled_seconds_total', 'COUNTER', 'Time no task of the container could make progress for want of memory, in whole seconds.'),
  ioWaiting: spec('container_pressure_io_waiting_seconds_total', 'COUNTER', 'Time tasks of the container waited for I/O, in whole seconds.'),
  ioStalled: spec('container_pressure_io_stalled_seconds_total', 'COUNTER', 'Time no task of the container could make progress for want of I/O, in whole seconds.'),
  // Times
  lastSeen: spec('container_last_seen', 'GAUGE', 'When the runtime last read the container, in seconds since the epoch.'),
  startTime: spec('container_start_time_seconds', 'GAUGE', 'When the container started, in seconds since the epoch.'),
  // Limits the container was given, as the kernel holds them
  specCpuPeriod: spec('container_spec_cpu_period', 'GAUGE', 'CFS period of the container, in microseconds.'),
  specCpuQuota: spec('container_spec_cpu_quota', 'GAUGE', 'CFS quota of the container per period, in microseconds; absent without a quota.'),
  specCpuShares: spec('container_spec_cpu_shares', 'GAUGE', 'CPU shares (relative weight) of the container.'),
  specMemoryLimit: spec('container_spec_memory_limit_bytes', 'GAUGE', 'Memory limit of the container in bytes; 0 means no limit.'),
  specMemoryReservation: spec('container_spec_memory_reservation_limit_bytes', 'GAUGE', 'Memory the container is guaranteed under pressure (soft limit), in bytes; 0 means none.'),
  specMemorySwapLimit: spec('container_spec_memory_swap_limit_bytes', 'GAUGE', 'Limit on memory plus swap of the container in bytes; 0 means no limit.'),
} as const satisfies Record<string, MetricSpec>;

export type MetricKey = keyof typeof METRICS;

/** The label keys of a metric, as its descriptor lists them. */
export function labelKeysOf(s: MetricSpec): string[] {
  return [...BASE_LABEL_KEYS, ...s.extraLabels];
}

/** What ListMetricDescriptors answers. */
export function metricDescriptors(): MetricDescriptor[] {
  return Object.values(METRICS).map((s) => ({ name: s.name, help: s.help, labelKeys: labelKeysOf(s) }));
}
