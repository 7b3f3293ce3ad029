// A 64-bit figure as CRI's UInt64Value. Pure; the stats and the metrics both send figures so.
import type { UInt64Value } from './types';

const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A figure as the encoder takes it cheapest: a number when exact as one (any real byte count
 * or counter), else a decimal string, which the encoder parses into a 64-bit value each time.
 */
export function u64(v: bigint | number | undefined): UInt64Value | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'number') return { value: Number.isSafeInteger(v) ? v : String(v) };
  return { value: v <= MAX_EXACT && v >= 0n ? Number(v) : v.toString() };
}
