// CRI LinuxContainerResources checked against what the kernel and Docker accept, and turned
// into the Docker fields that carry them. One set of rules for pods (the pause container, at
// RunPodSandbox and UpdatePodSandboxResources) and containers (CreateContainer and
// UpdateContainerResources). Pure.
import type { LinuxContainerResources__Output } from '../../cri/types';
import type { ContainerUpdateSpec } from '../../docker/types';
import { InvalidArgumentError, UnimplementedError } from '../../errors';
import { quote } from '../../util/quote';

/** Docker refuses memory limits below this (its own minimum, 6 MiB). */
const DOCKER_MIN_MEMORY_BYTES = 6 * 1024 * 1024;
const CPU_PERIOD_MIN_US = 1_000;
const CPU_PERIOD_MAX_US = 1_000_000;
const CPU_QUOTA_MIN_US = 1_000;
/** The kernel's largest CFS quota (2^44-1 µs); a larger one fails only when the container starts (a 500 from Docker). */
const CPU_QUOTA_MAX_US = 2 ** 44 - 1;
const CPU_SHARES_MIN = 2;
const CPU_SHARES_MAX = 262_144;
const CPUSET = /^\d+(-\d+)?(,\d+(-\d+)?)*$/;

/** The fields Docker can set on a running container (a subset of ContainerUpdateSpec). */
export type DockerResources = Pick<
  ContainerUpdateSpec,
  'CpuShares' | 'CpuPeriod' | 'CpuQuota' | 'CpusetCpus' | 'CpusetMems' | 'Memory' | 'MemorySwap'
>;

export interface CheckedResources {
  /** What Docker can set, at create and with its update call. */
  docker: DockerResources;
  /** Set at create only: Docker cannot change it on an existing container. */
  oomScoreAdj: number;
  /**
   * CRI fields that ask for something Docker 20.10 cannot do (names as in the proto): a
   * non-zero hugepage limit (kubelet lists every page size with limit 0 when a pod asks for
   * none, and those are fine) or any cgroup v2 "unified" entry.
   */
  unsupported: string[];
}

/** Parses an int64-as-string field; rejects anything JavaScript cannot hold exactly. */
function int64(field: string, text: string): number {
  if (text === '' || text === '0') return 0;
  if (!/^-?\d+$/.test(text)) throw new InvalidArgumentError(`${field}: ${quote(text)} is not an integer`);
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`${field}: ${text} is out of range`);
  return n;
}

function inRange(field: string, n: number, min: number, max: number, unit: string): number {
  if (n !== 0 && (n < min || n > max)) {
    throw new InvalidArgumentError(`${field}: ${n} is outside ${min}..${max}${unit} (0 means unset)`);
  }
  return n;
}

/** Validates `r` (the CRI message at `field`) and maps what Docker can carry. */
export function checkResources(field: string, r: LinuxContainerResources__Output): CheckedResources {
  const cpuPeriod = inRange(`${field}.cpu_period`, int64(`${field}.cpu_period`, r.cpuPeriod), CPU_PERIOD_MIN_US, CPU_PERIOD_MAX_US, ' µs');
  const rawQuota = int64(`${field}.cpu_quota`, r.cpuQuota);
  // -1 is the kernel's "no quota"; anything else must be at least its minimum.
  const cpuQuota = rawQuota === -1 ? -1 : inRange(`${field}.cpu_quota`, rawQuota, CPU_QUOTA_MIN_US, CPU_QUOTA_MAX_US, ' µs');
  const cpuShares = inRange(`${field}.cpu_shares`, int64(`${field}.cpu_shares`, r.cpuShares), CPU_SHARES_MIN, CPU_SHARES_MAX, '');
  const memory = inRange(
    `${field}.memory_limit_in_bytes`,
    int64(`${field}.memory_limit_in_bytes`, r.memoryLimitInBytes),
    DOCKER_MIN_MEMORY_BYTES,
    Number.MAX_SAFE_INTEGER,
    ' bytes',
  );
  const swap = int64(`${field}.memory_swap_limit_in_bytes`, r.memorySwapLimitInBytes);
  if (swap < -1) throw new InvalidArgumentError(`${field}.memory_swap_limit_in_bytes: ${swap} is negative (-1 means unlimited)`);
  if (swap > 0 && memory > 0 && swap < memory) {
    throw new InvalidArgumentError(
      `${field}.memory_swap_limit_in_bytes: ${swap} is below memory_limit_in_bytes ${memory} (it counts memory plus swap)`,
    );
  }
  if (swap !== 0 && memory === 0) {
    throw new InvalidArgumentError(`${field}.memory_swap_limit_in_bytes: needs memory_limit_in_bytes as well`);
  }
  const oomScoreAdj = int64(`${field}.oom_score_adj`, r.oomScoreAdj);
  if (oomScoreAdj < -1000 || oomScoreAdj > 1000) {
    throw new InvalidArgumentError(`${field}.oom_score_adj: ${oomScoreAdj} is outside -1000..1000`);
  }
  for (const [name, value] of [
    ['cpuset_cpus', r.cpusetCpus],
    ['cpuset_mems', r.cpusetMems],
  ] as const) {
    if (value !== '' && !CPUSET.test(value)) {
      throw new InvalidArgumentError(`${field}.${name}: ${quote(value)} is not a list like "0-3,5"`);
    }
  }
  for (const [i, h] of r.hugepageLimits.entries()) {
    if (!/^\d+[KMG]B$/.test(h.pageSize)) {
      throw new InvalidArgumentError(`${field}.hugepage_limits[${i}].page_size: ${quote(h.pageSize)} is not like "2MB"`);
    }
    if (!/^\d+$/.test(h.limit)) throw new InvalidArgumentError(`${field}.hugepage_limits[${i}].limit: must be a non-negative integer`);
  }

  const docker: DockerResources = {};
  if (cpuShares) docker.CpuShares = cpuShares;
  if (cpuPeriod) docker.CpuPeriod = cpuPeriod;
  if (cpuQuota) docker.CpuQuota = cpuQuota;
  if (r.cpusetCpus) docker.CpusetCpus = r.cpusetCpus;
  if (r.cpusetMems) docker.CpusetMems = r.cpusetMems;
  if (memory) {
    docker.Memory = memory;
    // Without an explicit swap limit the pod gets none (Docker would otherwise allow as much
    // swap again as memory): kubelet's default is no swap.
    docker.MemorySwap = swap === 0 ? memory : swap;
  }
  const unsupported: string[] = [];
  if (r.hugepageLimits.some((h) => h.limit !== '0')) unsupported.push('hugepage_limits');
  if (Object.keys(r.unified).length > 0) unsupported.push('unified');
  return { docker, oomScoreAdj, unsupported };
}

/** Refuses (UNIMPLEMENTED) resources Docker cannot apply, naming the fields and their values. */
export function refuseUnsupported(field: string, r: LinuxContainerResources__Output, checked: CheckedResources): void {
  if (checked.unsupported.includes('hugepage_limits')) {
    const asked = r.hugepageLimits.filter((h) => h.limit !== '0').map((h) => `${h.pageSize}: ${h.limit}`);
    throw new UnimplementedError(`${field}.hugepage_limits: Docker cannot limit hugepages (${asked.join(', ')})`);
  }
  if (checked.unsupported.includes('unified')) {
    throw new UnimplementedError(`${field}.unified: Docker 20.10 cannot set cgroup v2 files (${Object.keys(r.unified).join(', ')})`);
  }
}
