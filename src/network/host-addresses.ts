// The node's own addresses, which host-network pods report as theirs: those of the interface
// holding the default route (IPv4 first, then global IPv6), as the address a peer would use.
import * as fs from 'node:fs';
import * as os from 'node:os';

type Interfaces = NodeJS.Dict<os.NetworkInterfaceInfo[]>;

/** The interface of the IPv4 default route in /proc/net/route text; undefined when there is none. */
export function defaultRouteInterface(procNetRoute: string): string | undefined {
  for (const line of procNetRoute.split('\n').slice(1)) {
    const [iface, destination, , , , , , mask] = line.trim().split(/\s+/);
    if (iface && destination === '00000000' && mask === '00000000') return iface;
  }
  return undefined;
}

/** Addresses of `preferred` (or, without it, of every external interface): IPv4 first, link-local left out. Pure. */
export function pickHostAddresses(interfaces: Interfaces, preferred: string | undefined): string[] {
  const names = preferred && interfaces[preferred] ? [preferred] : Object.keys(interfaces).sort();
  const all = names.flatMap((n) => interfaces[n] ?? []).filter((a) => !a.internal && !(a.family === 'IPv6' && a.address.toLowerCase().startsWith('fe80')));
  const v4 = all.filter((a) => a.family === 'IPv4').map((a) => a.address);
  const v6 = all.filter((a) => a.family === 'IPv6').map((a) => a.address);
  return [...new Set([...v4, ...v6])];
}

export function hostAddresses(): string[] {
  let route = '';
  try {
    route = fs.readFileSync('/proc/net/route', 'utf8');
  } catch {
    // no IPv4 routing table to read: fall back to every interface
  }
  return pickHostAddresses(os.networkInterfaces(), defaultRouteInterface(route));
}
