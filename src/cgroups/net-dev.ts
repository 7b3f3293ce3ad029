// A network namespace's interface counters from /proc/<pid>/net/dev, for the stats RPCs'
// NetworkUsage (bytes and errors) and the pod network metrics (all eight counters). Pure
// parsing; the loopback interface is left out (kubelet ignores it too).

export interface InterfaceCounters {
  name: string;
  rxBytes: bigint;
  rxPackets: bigint;
  rxErrors: bigint;
  rxDropped: bigint;
  txBytes: bigint;
  txPackets: bigint;
  txErrors: bigint;
  txDropped: bigint;
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
    // Receive: bytes packets errs drop fifo frame compressed multicast; then transmit: bytes packets errs drop ...
    if (name === '' || name === 'lo' || fields.length < 16 || !fields.every((f) => /^\d+$/.test(f))) continue;
    const n = fields.map((f) => BigInt(f));
    out.push({ name, rxBytes: n[0]!, rxPackets: n[1]!, rxErrors: n[2]!, rxDropped: n[3]!, txBytes: n[8]!, txPackets: n[9]!, txErrors: n[10]!, txDropped: n[11]! });
  }
  return out;
}
