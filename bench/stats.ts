// Summaries of latency samples, and the shim / raw ratio. Pure.

export interface LatencySummary {
  /** Number of samples. */
  n: number;
  /** Milliseconds. */
  p50: number;
  p95: number;
  mean: number;
  max: number;
}

/**
 * The q-th percentile (0..1) of `samples` by linear interpolation between the closest ranks,
 * so that p50 of an even-sized set is the mean of its two middle values.
 */
export function percentile(samples: readonly number[], q: number): number {
  if (samples.length === 0) throw new Error('percentile of no samples');
  if (!(q >= 0 && q <= 1)) throw new Error(`percentile: q ${q} is not within 0..1`);
  const sorted = [...samples].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/** Rounds to microseconds, which is all a millisecond timer on a shared machine can say. */
export function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  return {
    n: samples.length,
    p50: roundMs(percentile(samples, 0.5)),
    p95: roundMs(percentile(samples, 0.95)),
    mean: roundMs(mean),
    max: roundMs(Math.max(...samples)),
  };
}

/** shim / raw, to three decimals; null when raw is zero (no meaningful ratio). */
export function ratio(shim: number, raw: number): number | null {
  if (raw <= 0) return null;
  return Math.round((shim / raw) * 1000) / 1000;
}
