// usage_nano_cores is a rate, and cgroups only count cumulative CPU time: the tracker keeps the
// previous cumulative reading per key (container ID, or "pod:<id>") and answers the rate
// between that reading and the new one. The first reading of a key has no rate (kubelet
// accepts it absent). Pure: the caller passes monotonic times.

interface Previous {
  usageNs: bigint;
  atNs: bigint;
  rate: bigint | undefined;
}

/** Readings closer together than this give a noisy rate: the last rate is answered instead. */
export const MIN_RATE_INTERVAL_NS = 100_000_000n;

export class CpuRateTracker {
  private readonly previous = new Map<string, Previous>();

  /** Records a reading and answers nanocores since the previous one, if there is one. */
  rate(key: string, usageNs: bigint, atNs: bigint): bigint | undefined {
    const prev = this.previous.get(key);
    if (prev && usageNs >= prev.usageNs && atNs - prev.atNs < MIN_RATE_INTERVAL_NS) return prev.rate;
    let rate: bigint | undefined;
    // A counter that went backwards belongs to a new cgroup: start over.
    if (prev && usageNs >= prev.usageNs && atNs > prev.atNs) {
      rate = ((usageNs - prev.usageNs) * 1_000_000_000n) / (atNs - prev.atNs);
    }
    this.previous.set(key, { usageNs, atNs, rate });
    return rate;
  }

  forget(key: string): void {
    this.previous.delete(key);
  }

  /** Drops every key `keep` rejects (containers that no longer exist). */
  prune(keep: (key: string) => boolean): void {
    for (const key of this.previous.keys()) if (!keep(key)) this.previous.delete(key);
  }

  get size(): number {
    return this.previous.size;
  }
}
