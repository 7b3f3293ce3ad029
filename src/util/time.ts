// Docker reports times as RFC 3339 strings with nanoseconds ("2026-11-22T02:04:17.123456789Z");
// CRI wants int64 nanoseconds since the epoch. JavaScript numbers lose precision past 2^53,
// so nanoseconds travel as decimal strings (the proto loader sends int64 from strings).

/** Docker's "never" ("0001-01-01T00:00:00Z") and anything unparsable become "0". */
export function rfc3339ToNanos(text: string | undefined | null): string {
  if (!text) return '0';
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(text);
  if (!m) return '0';
  const seconds = Date.parse(`${m[1]}${m[3]}`);
  if (!Number.isFinite(seconds) || seconds <= 0) return '0';
  const fraction = BigInt((m[2] ?? '').padEnd(9, '0'));
  return (BigInt(seconds) * 1_000_000n + fraction).toString();
}

/** Unix seconds (as Docker's list API gives them) to nanoseconds. */
export function secondsToNanos(seconds: number): string {
  return (BigInt(Math.trunc(seconds)) * 1_000_000_000n).toString();
}

/** Milliseconds since the epoch (Date.now()'s) to nanoseconds. */
export function msToNanos(ms: number): string {
  return (BigInt(Math.trunc(ms)) * 1_000_000n).toString();
}

/** Now, in nanoseconds since the epoch. */
export function nowNanos(): string {
  return msToNanos(Date.now());
}
