// The MTU kubenet gives cbr0 and the pods' veths when --network-plugin-mtu is 0. kubenet took
// the smallest MTU among the interfaces that are up and neither loopback nor point-to-point
// (its findMinMTU), falling back to 1460 when there is none or the smallest is below the IPv4
// minimum of 576. The same rule here, over `ip -j link show`.
import type { CommandRunner } from '../hostport/runner';

export const FALLBACK_MTU = 1460;
const MIN_MTU = 576;

interface LinkInfo {
  name: string;
  mtu: number;
  /** As `ip -j link` prints them: UP, LOOPBACK, POINTOPOINT, ... */
  flags: readonly string[];
}

interface MtuChoice {
  mtu: number;
  /** The interface it came from; undefined for the fallback. */
  from: string | undefined;
}

export function pickMtu(links: readonly LinkInfo[]): MtuChoice {
  let best: LinkInfo | undefined;
  for (const link of links) {
    if (!link.flags.includes('UP') || link.flags.includes('LOOPBACK') || link.flags.includes('POINTOPOINT')) continue;
    if (!best || link.mtu < best.mtu) best = link;
  }
  if (!best || best.mtu < MIN_MTU) return { mtu: FALLBACK_MTU, from: undefined };
  return { mtu: best.mtu, from: best.name };
}

export function parseIpLinkJson(text: string): LinkInfo[] {
  const parsed: unknown = JSON.parse(text.trim() || '[]');
  if (!Array.isArray(parsed)) return [];
  const out: LinkInfo[] = [];
  for (const item of parsed as unknown[]) {
    if (typeof item !== 'object' || item === null) continue;
    const { ifname, mtu, flags } = item as { ifname?: unknown; mtu?: unknown; flags?: unknown };
    if (typeof ifname !== 'string' || typeof mtu !== 'number') continue;
    out.push({ name: ifname, mtu, flags: Array.isArray(flags) ? flags.filter((f): f is string => typeof f === 'string') : [] });
  }
  return out;
}

/** --network-plugin-mtu when set, else the MTU picked from the interfaces the runner sees. */
export async function resolveMtu(runner: CommandRunner, flagMtu: number): Promise<MtuChoice> {
  if (flagMtu > 0) return { mtu: flagMtu, from: undefined };
  return pickMtu(parseIpLinkJson(await runner.run('ip', ['-j', 'link', 'show'])));
}
