// CRI messages as the proto loader hands them to handlers (every field present, int64 as
// strings), for unit tests that build requests by hand.
import type { LinuxContainerResources__Output } from '../../src/cri/types';

/** LinuxContainerResources with nothing set, plus `over`. */
export function linuxResources(over: Partial<LinuxContainerResources__Output> = {}): LinuxContainerResources__Output {
  return {
    cpuPeriod: '0',
    cpuQuota: '0',
    cpuShares: '0',
    memoryLimitInBytes: '0',
    oomScoreAdj: '0',
    cpusetCpus: '',
    cpusetMems: '',
    hugepageLimits: [],
    unified: {},
    memorySwapLimitInBytes: '0',
    ...over,
  };
}
