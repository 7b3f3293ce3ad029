// Go-style durations ("90s", "1m30s", "500ms", "2h"), as kubelet and cri-dockerd flags take
// them. A bare "0" is allowed; any other bare number is ambiguous and refused.
const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

export function parseDuration(text: string): number {
  const input = text.trim();
  if (input === '0') return 0;
  const part = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = part.exec(input); m; m = part.exec(input)) {
    total += Number(m[1]) * (UNIT_MS[m[2]!] ?? Number.NaN);
    consumed = part.lastIndex;
  }
  if (input === '' || consumed !== input.length || !Number.isFinite(total)) {
    throw new Error(`${JSON.stringify(text)} is not a duration (examples: 30s, 1m30s, 500ms)`);
  }
  return Math.round(total);
}
