// Reading the shim's /metrics answer back: prom2javascript parses the text exposition format
// (histograms with their labels, escapes), and these helpers pick series out of it.
import * as http from 'node:http';
import { getMetricsFromIterator, type PromHistogramData, type PromLabels, type PromMetric, type PromMetrics } from 'prom2javascript';

export type { PromMetrics };

/** A sample line whose value is NaN (prom-client writes "Nan"; Prometheus reads either case). */
const NAN_SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+nan(\s+-?\d+)?$/i;

/**
 * Every family in an exposition text. prom2javascript's number pattern has no NaN (the format
 * allows it; prom-client's event-loop lag gauges read NaN when no delay was sampled since the
 * last scrape), so such samples are parsed with 0 in its place and set to NaN afterwards.
 */
export async function parseExposition(text: string): Promise<PromMetrics> {
  const nanSeries: Array<{ name: string; line: string }> = [];
  const lines = text.split('\n').map((line) => {
    const m = NAN_SAMPLE.exec(line);
    if (!m) return line;
    const zeroed = `${m[1]}${m[2] ?? ''} 0${m[3] ?? ''}`;
    nanSeries.push({ name: m[1]!, line: zeroed });
    return zeroed;
  });
  const metrics = await getMetricsFromIterator(lines[Symbol.iterator]());
  for (const { name, line } of nanSeries) {
    // The same parser reads the series' labels, so they compare equal to the parsed entry's.
    const [only] = Object.values(await getMetricsFromIterator([line][Symbol.iterator]()));
    const labels = (only!.data[0] as { labels: PromLabels }).labels;
    const entry = (metrics[name]?.data as Array<{ labels: PromLabels; value: number }> | undefined)?.find(
      (d) => JSON.stringify(d.labels) === JSON.stringify(labels),
    );
    if (!entry) throw new Error(`the NaN sample ${line} was lost in parsing`);
    entry.value = NaN;
  }
  return metrics;
}

/** GET http://host:port/path with its status, content type and body. */
export function scrape(host: string, port: number, path = '/metrics', method = 'GET'): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port, path, method, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${host}:${port}${path} within 5 s`)));
    req.on('error', reject);
    req.end();
  });
}

/** The family, or a failure naming what the exposition lacks. */
export function family(metrics: PromMetrics, name: string): PromMetric {
  const found = metrics[name];
  if (!found) throw new Error(`no metric family ${name} in the exposition (it has ${Object.keys(metrics).length} others)`);
  return found;
}

function matches(labels: PromLabels, want: PromLabels): boolean {
  return Object.entries(want).every(([k, v]) => labels[k] === v);
}

/** The value of the counter or gauge series whose labels include `want` (undefined if none). */
export function sample(metrics: PromMetrics, name: string, want: PromLabels = {}): number | undefined {
  const data = family(metrics, name).data as Array<{ labels: PromLabels; value?: number }>;
  return data.find((d) => matches(d.labels, want))?.value;
}

/** The histogram series whose labels include `want` (undefined if none). */
export function histogram(metrics: PromMetrics, name: string, want: PromLabels = {}): PromHistogramData | undefined {
  return (family(metrics, name).data as PromHistogramData[]).find((d) => matches(d.labels, want));
}

/** The set of label names each series of the family carries, as sorted, comma-joined strings. */
export function labelSets(metrics: PromMetrics, name: string): Set<string> {
  return new Set((family(metrics, name).data as Array<{ labels: PromLabels }>).map((d) => Object.keys(d.labels).sort().join(',')));
}

/**
 * Every counter series (and histogram count) of `before`, with the value `after` has for it:
 * the pairs a "counters only rise" check compares. A series missing later is reported as NaN.
 */
export function counterPairs(before: PromMetrics, after: PromMetrics): Array<{ series: string; before: number; after: number }> {
  const pairs: Array<{ series: string; before: number; after: number }> = [];
  const key = (labels: PromLabels): string => JSON.stringify(Object.entries(labels).sort());
  for (const [name, fam] of Object.entries(before)) {
    if (fam.type !== 'counter' && fam.type !== 'histogram') continue;
    const later = new Map<string, number>();
    for (const d of (after[name]?.data ?? []) as Array<{ labels: PromLabels; value?: number; count?: number }>) {
      later.set(key(d.labels), fam.type === 'counter' ? d.value! : d.count!);
    }
    for (const d of fam.data as Array<{ labels: PromLabels; value?: number; count?: number }>) {
      const series = `${name}${key(d.labels)}`;
      pairs.push({ series, before: fam.type === 'counter' ? d.value! : d.count!, after: later.get(key(d.labels)) ?? NaN });
    }
  }
  return pairs;
}
