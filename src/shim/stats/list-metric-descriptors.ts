// ListMetricDescriptors: the fixed list of metrics ListPodSandboxMetrics reports (../../pod-metrics/descriptors.ts).
import type { ListMetricDescriptorsResponse } from '../../cri/types';
import { metricDescriptors } from '../../pod-metrics/descriptors';

export async function listMetricDescriptors(): Promise<ListMetricDescriptorsResponse> {
  return { descriptors: metricDescriptors() };
}
