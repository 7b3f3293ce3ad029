// ListMetricDescriptors: the fixed list of metrics ListPodSandboxMetrics reports (../../pod-metrics/metric-table.ts).
import type { ListMetricDescriptorsResponse } from '../../cri/types';
import { metricDescriptors } from '../../pod-metrics/metric-table';

export async function listMetricDescriptors(): Promise<ListMetricDescriptorsResponse> {
  return { descriptors: metricDescriptors() };
}
