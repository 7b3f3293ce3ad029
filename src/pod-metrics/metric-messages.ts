// Figures read from the kernel turned into CRI Metric messages, by the one table of metrics
// (./metric-table.ts). Pure. Each metric carries its descriptor's base labels (pod, namespace,
// container, id, image) and then its own extra ones, so the label count always matches the
// descriptor. A figure that was not read is left out: kubelet would otherwise show a 0 it never
// measured.
import type { Metric } from '../cri/types';
import { u64 } from '../cri/u64';
import type { InterfaceCounters } from '../cgroups/net-dev';
import { METRICS, type BaseLabels, type ContainerReading, type MetricSpec } from './metric-table';

export type { ContainerReading, LayerFigures } from './metric-table';

export class MetricList {
  readonly metrics: Metric[] = [];
  constructor(private readonly base: readonly string[]) {}

  /**
   * Adds the metric unless its value was not read. No timestamp (0 on the wire): these are
   * live readings, for which the CRI asks for 0 and kubelet lets Prometheus stamp the scrape.
   */
  add(s: MetricSpec, value: bigint | undefined, extra: readonly string[] = []): void {
    if (value === undefined) return;
    if (extra.length !== s.extraLabels.length) throw new Error(`${s.name} takes ${s.extraLabels.length} extra labels, given ${extra.length}`);
    this.metrics.push({ name: s.name, metricType: s.kind, labelValues: [...this.base, ...extra], value: u64(value < 0n ? 0n : value) });
  }
}

const baseValues = (l: BaseLabels): string[] => [l.pod, l.namespace, l.container, l.id, l.image];

/** A running container's metrics. */
export function containerMetricsOf(r: ContainerReading): Metric[] {
  const out = new MetricList(baseValues(r.labels));
  for (const s of METRICS) {
    if (s.values.of !== 'container') continue;
    for (const [value, extra] of s.values.samples(r)) out.add(s, value, extra);
  }
  return out.metrics;
}

/** The pod's network metrics, one set per interface of its namespace; the id label is the sandbox's. */
export function podNetworkMetricsOf(pod: { name: string; namespace: string; sandboxId: string }, interfaces: readonly InterfaceCounters[]): Metric[] {
  const out = new MetricList(baseValues({ pod: pod.name, namespace: pod.namespace, container: '', id: pod.sandboxId, image: '' }));
  for (const i of interfaces) {
    for (const s of METRICS) if (s.values.of === 'interface') out.add(s, s.values.value(i), [i.name]);
  }
  return out.metrics;
}
