// CRI messages as the proto loader hands them to handlers (every field present, int64 as
// strings), for unit tests that build requests by hand.
import type { ContainerConfig__Output, LinuxContainerResources__Output, PodSandboxConfig__Output } from '../../src/cri/types';

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

/** A container config for `busybox:1`, container app (attempt 2), nothing else set, plus `over`. */
export function containerConfig(over: Partial<ContainerConfig__Output> = {}): ContainerConfig__Output {
  return {
    metadata: { name: 'app', attempt: 2 }, image: { image: 'busybox:1', annotations: {}, userSpecifiedImage: '', runtimeHandler: '', imageRef: '' },
    command: [], args: [], workingDir: '', envs: [], mounts: [], devices: [], labels: {}, annotations: {}, logPath: '',
    stdin: false, stdinOnce: false, tty: false, linux: null, windows: null, CDIDevices: [], stopSignal: 'RUNTIME_DEFAULT', ...over,
  };
}

/** The sandbox config kubelet sends with CreateContainer: pod default/web (uid u-1) under /kubepods/pod1, plus `over`. */
export function sandboxConfig(over: Partial<PodSandboxConfig__Output> = {}): PodSandboxConfig__Output {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'u-1', attempt: 0 }, hostname: '', logDirectory: '/var/log/pods/x',
    dnsConfig: null, portMappings: [], labels: {}, annotations: {}, linux: { cgroupParent: '/kubepods/pod1', securityContext: null, sysctls: {}, overhead: null, resources: null },
    windows: null, ...over,
  };
}
