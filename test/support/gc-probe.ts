// Counts a shim's garbage collections by kind, for tests of what a workload costs the collector.
// Loaded into the shim under test with `node --require` (ShimOptions.nodeFlags: GC_PROBE_FLAGS)
// and told where to write by GC_PROBE_FILE_ENV; after each batch of collections the counts so
// far replace the file's content. Without the variable (the test process) it does nothing.
import * as fs from 'node:fs';
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';

export const GC_PROBE_FILE_ENV = 'CDS_TEST_GC_PROBE_FILE';
/** The node flags that load this probe into a shim. */
export const GC_PROBE_FLAGS: readonly string[] = ['--require', __filename];

export interface GcCounts {
  /** Mark-compacts: the whole heap marked. */
  major: number;
  /** Scavenges of the young generation. */
  minor: number;
}

/** The counts the probe wrote last; none yet is zero of each. */
export function readGcCounts(file: string): GcCounts {
  if (!fs.existsSync(file)) return { major: 0, minor: 0 };
  return JSON.parse(fs.readFileSync(file, 'utf8')) as GcCounts;
}

const target = process.env[GC_PROBE_FILE_ENV];
if (target) {
  const counts: GcCounts = { major: 0, minor: 0 };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) counts.major++;
      else if (kind === constants.NODE_PERFORMANCE_GC_MINOR) counts.minor++;
    }
    // Renamed into place, so that the test never reads a file half written (seen once: a parse
    // of an empty file failed the transfer's count).
    fs.writeFileSync(`${target}.tmp`, JSON.stringify(counts));
    fs.renameSync(`${target}.tmp`, target);
  }).observe({ entryTypes: ['gc'] });
}
