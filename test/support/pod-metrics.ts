// ListPodSandboxMetrics' answer as the collector encodes it (src/pod-metrics/metric-encoding.ts),
// decoded as a client reads it.
import { criContract } from '../../src/cri/contract';
import type { ListPodSandboxMetricsResponse__Output, PodSandboxMetrics__Output } from '../../src/cri/types';

export function decodePodMetrics(bytes: Buffer): PodSandboxMetrics__Output[] {
  const rpc = criContract().runtime.v1.RuntimeService.service.ListPodSandboxMetrics;
  return (rpc.responseDeserialize(bytes) as ListPodSandboxMetricsResponse__Output).podMetrics;
}
