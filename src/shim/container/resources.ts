// Container resources (CRI LinuxContainerResources) as Docker's HostConfig/update fields, and
// back. Docker 20.10 has no hugepage limits and no cgroup v2 "unified" map, so a request that
// needs them is refused rather than silently ignored. kubelet lists every hugepage size with
// limit 0 when the pod asks for none: those are fine.
import type { ContainerResources, LinuxContainerResources__Output } from '../../cri/types';
import type { ContainerInspect, ContainerUpdateSpec } from '../../docker/types';
import { InvalidArgumentError, UnimplementedError } from '../../errors';

export interface DockerResources {
  CpuPeriod?: number;
  CpuQuota?: number;
  CpuShares?: number;
  CpusetCpus?: string;
  CpusetMems?: string;
  Memory?: number;
  MemorySwap?: number;
  OomScoreAdj?: number;
}

function int(field: string, text: string, min: number): number {
  if (!/^-?\d+$/.test(text)) throw new InvalidArgumentError(`${field}: ${JSON.stringify(text)} is not an integer`);
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`${field}: ${text} is out of range`);
  return n;
}

const CPUSET = /^(\d+(-\d+)?)(,\d+(-\d+)?)*$/;

export function refuseUnsupportedResources(field: string, r: LinuxContainerResources__Output): void {
  for (const h of r.hugepageLimits) {
    if (h.limit !== '0' && h.limit !== '') {
      throw new UnimplementedError(`${field}.hugepage_limits: Docker cannot limit hugepages (${h.pageSize}: ${h.limit})`);
    }
  }
  const unified = Object.keys(r.unified ?? {});
  if (unified.length > 0) {
    throw new UnimplementedError(`${field}.unified: Docker 20.10 cannot set cgroup v2 files (${unified.join(', ')})`);
  }
}

/** CRI resources to Docker's. Zero means "not set" on the wire, so zero fields are left out. */
export function toDockerResources(field: string, r: LinuxContainerResources__Output | null): DockerResources {
  if (!r) return {};
  refuseUnsupportedResources(field, r);
  const out: DockerResources = {};
  const period = int(`${field}.cpu_period`, r.cpuPeriod, 0);
  const quota = int(`${field}.cpu_quota`, r.cpuQuota, -1);
  const shares = int(`${field}.cpu_shares`, r.cpuShares, 0);
  const memory = int(`${field}.memory_limit_in_bytes`, r.memoryLimitInBytes, 0);
  const swap = int(`${field}.memory_swap_limit_in_bytes`, r.memorySwapLimitInBytes, -1);
  const oom = int(`${field}.oom_score_adj`, r.oomScoreAdj, -1000);
  if (oom > 1000) throw new InvalidArgumentError(`${field}.oom_score_adj: ${oom} is outside -1000..1000`);
  if (period > 0) out.CpuPeriod = period;
  if (quota !== 0) out.CpuQuota = quota;
  if (shares > 0) out.CpuShares = shares;
  if (memory > 0) {
    out.Memory = memory;
    // Docker would otherwise allow as much swap again; Kubernetes nodes run without swap
    // unless the request says how much.
    out.MemorySwap = swap !== 0 ? swap : memory;
  } else if (swap !== 0) {
    out.MemorySwap = swap;
  }
  if (oom !== 0) out.OomScoreAdj = oom;
  if (r.cpusetCpus !== '') {
    if (!CPUSET.test(r.cpusetCpus)) throw new InvalidArgumentError(`${field}.cpuset_cpus: ${JSON.stringify(r.cpusetCpus)} is not a CPU list`);
    out.CpusetCpus = r.cpusetCpus;
  }
  if (r.cpusetMems !== '') {
    if (!CPUSET.test(r.cpusetMems)) throw new InvalidArgumentError(`${field}.cpuset_mems: ${JSON.stringify(r.cpusetMems)} is not a node list`);
    out.CpusetMems = r.cpusetMems;
  }
  return out;
}

/**
 * The update Docker can apply to a running container. oom_score_adj cannot be changed after
 * start: a request that keeps it as it is passes, one that changes it is refused.
 */
export function toDockerUpdate(field: string, r: LinuxContainerResources__Output, current: ContainerInspect): ContainerUpdateSpec {
  const d = toDockerResources(field, r);
  const currentOom = current.HostConfig.OomScoreAdj ?? 0;
  if ((d.OomScoreAdj ?? 0) !== currentOom) {
    throw new UnimplementedError(`${field}.oom_score_adj: Docker cannot change it on an existing container (it is ${currentOom})`);
  }
  const { OomScoreAdj: _unused, ...update } = d;
  void _unused;
  return update;
}

/** The resources a container runs with, as ContainerStatus reports them. */
export function resourcesFromInspect(inspect: ContainerInspect): ContainerResources {
  const hc = inspect.HostConfig;
  return {
    linux: {
      cpuPeriod: String(hc.CpuPeriod ?? 0),
      cpuQuota: String(hc.CpuQuota ?? 0),
      cpuShares: String(hc.CpuShares ?? 0),
      memoryLimitInBytes: String(hc.Memory ?? 0),
      memorySwapLimitInBytes: String(hc.MemorySwap ?? 0),
      oomScoreAdj: String(hc.OomScoreAdj ?? 0),
      cpusetCpus: hc.CpusetCpus ?? '',
      cpusetMems: hc.CpusetMems ?? '',
    },
  };
}
