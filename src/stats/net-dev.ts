// A network namespace's interface counters from /proc/<pid>/net/dev, as CRI's NetworkUsage.
// Pure parsing; the loopback interface is left out (kubelet ignores it too).

export interface InterfaceCounters {
  name: string;
  rxBytes: bigint;
  rxErrors: bigint;
  txBytes: bigint;
  txErrors: bigint;
}

/** The interface kubelet treats as the pod's own. */
export const DEFAULT_INTERFACE = 'eth0';

export function parseNetDev(text: string): InterfaceCounters[] {
  const out: InterfaceCounters[] = [];
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    const fields = line.slice(colon + 1).trim().split(/\s+/);
    // Receive: bytes packets errs drop fifo frame compressed multicast; then transmit: bytes packets errs ...
    if (name === '' || name === 'lo' || fields.length < 16 || !fields.every((f) => /^\d+$/.test(f))) continue;
    out.push({
      name,
      rxBytes: BigInt(fields[0]!),
      rxErrors: BigInt(fields[2]!),
      txBytes: BigInt(fields[8]!),
      txErrors: BigInt(fields[10]!),
    });
  }
  return out;
}
