// Figures read from the kernel turned into CRI Metric messages, by the one table of metrics
// (./metric-table.ts). Pure. Each metric carries its descriptor's base labels (pod, namespace,
// container, id, image) and then its own extra ones, so the label count always matches the
// descriptor. A figure that was not read is left out: kubelet would otherwise show a 0 it never
// measured. The metrics go to a sink: Metric messages here (MetricList), or their protobuf
// encoding, written as they come (./metric-encoding.ts: what ListPodSandboxMetrics sends).
import type { Metric } from '../cri/types';
import { u64 } from '../cri/u64';
import type { InterfaceCounters } from '../cgroups/net-dev';
import { METRICS, type BaseLabels, type ContainerReading, type MetricSpec } from './metric-table';

export type { BaseLabels, ContainerReading, LayerFigures } from './metric-table';

/** Where a container's or a pod's metrics go, each with its value and extra labels; the base labels are the sink's. */
export abstract class MetricSink {
  /**
   * Adds the metric unless its value was not read. No timestamp (0 on the wire): these are
   * live readings, for which the CRI asks for 0 and kubelet lets Prometheus stamp the scrape.
   */
  add(s: MetricSpec, value: bigint | undefined, extra: readonly string[] = []): void {
    if (value === undefined) return;
    if (extra.length !== s.extraLabels.length) throw new Error(`${s.name} takes ${s.extraLabels.length} extra labels, given ${extra.length}`);
    this.put(s, value < 0n ? 0n : value, extra);
  }

  protected abstract put(s: MetricSpec, value: bigint, extra: readonly string[]): void;
}

/** Metrics as Metric messages, every one with the same base labels. */
export class MetricList extends MetricSink {
  readonly metrics: Metric[] = [];
  constructor(private readonly base: readonly string[]) {
    super();
  }

  protected put(s: MetricSpec, value: bigint, extra: readonly string[]): void {
    this.metrics.push({ name: s.name, metricType: s.kind, labelValues: [...this.base, ...extra], value: u64(value) });
  }
}

/** The base label values, in the descriptors' order. */
const baseValues = (l: BaseLabels): string[] => [l.pod, l.namespace, l.container, l.id, l.image];

/** The base labels of a pod's own metrics: the id label is the sandbox's, no container or image. */
export const podLabels = (pod: { name: string; namespace: string; sandboxId: string }): BaseLabels => ({ pod: pod.name, namespace: pod.namespace, container: '', id: pod.sandboxId, image: '' });

/** A running container's metrics, into `out`. */
export function containerMetricsInto(out: MetricSink, r: ContainerReading): void {
  for (const s of METRICS) {
    if (s.values.of !== 'container') continue;
    for (const [value, extra] of s.values.samples(r)) out.add(s, value, extra);
  }
}

/** The pod's network metrics, one set per interface of its namespace, into `out`. */
export function podNetworkMetricsInto(out: MetricSink, interfaces: readonly InterfaceCounters[]): void {
  for (const i of interfaces) {
    for (const s of METRICS) if (s.values.of === 'interface') out.add(s, s.values.value(i), [i.name]);
  }
}

/** A running container's metrics as messages. */
export function containerMetricsOf(r: ContainerReading): Metric[] {
  const out = new MetricList(baseValues(r.labels));
  containerMetricsInto(out, r);
  return out.metrics;
}

/** The pod's network metrics as messages. */
export function podNetworkMetricsOf(pod: { name: string; namespace: string; sandboxId: string }, interfaces: readonly InterfaceCounters[]): Metric[] {
  const out = new MetricList(baseValues(podLabels(pod)));
  podNetworkMetricsInto(out, interfaces);
  return out.metrics;
}
