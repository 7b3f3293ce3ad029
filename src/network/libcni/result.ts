// A plugin's ADD result, any spec version, read into one shape (pure). 0.3.0 to 1.1.0 agree on
// interfaces/ips/routes/dns (0.3.x also has a `version` per IP, which we do not need); 0.1.0 and
// 0.2.0 have `ip4` and `ip6`, each an address with its gateway and routes, and no interfaces.
import { isIP } from 'node:net';

interface CniInterface {
  name: string;
  mac?: string;
  sandbox?: string;
}

interface CniIp {
  /** CIDR notation, e.g. 10.88.0.5/16. */
  address: string;
  gateway?: string;
  /** Index into interfaces. */
  interface?: number;
}

export interface CniResult {
  cniVersion: string;
  interfaces: CniInterface[];
  ips: CniIp[];
  routes: Array<{ dst: string; gw?: string }>;
  dns: { nameservers?: string[]; domain?: string; search?: string[]; options?: string[] };
}

class CniResultError extends Error {}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads a result document; throws CniResultError when it is not one. */
export function parseResult(doc: unknown, fallbackVersion: string): CniResult {
  if (!isRecord(doc)) throw new CniResultError('the result is not a JSON object');
  const cniVersion = typeof doc.cniVersion === 'string' ? doc.cniVersion : fallbackVersion;
  const interfaces = Array.isArray(doc.interfaces)
    ? doc.interfaces.filter(isRecord).map((i) => ({
        name: String(i.name ?? ''),
        ...(typeof i.mac === 'string' ? { mac: i.mac } : {}),
        ...(typeof i.sandbox === 'string' ? { sandbox: i.sandbox } : {}),
      }))
    : [];
  if (!Array.isArray(doc.ips) && (isRecord(doc.ip4) || isRecord(doc.ip6))) return parseOldResult(doc, cniVersion);
  const ips: CniIp[] = [];
  for (const raw of Array.isArray(doc.ips) ? doc.ips : []) {
    if (!isRecord(raw) || typeof raw.address !== 'string' || isIP(raw.address.split('/')[0] ?? '') === 0) {
      throw new CniResultError(`the result has a malformed ip entry: ${JSON.stringify(raw).slice(0, 100)}`);
    }
    const ip: CniIp = { address: raw.address };
    if (typeof raw.gateway === 'string') ip.gateway = raw.gateway;
    if (typeof raw.interface === 'number') ip.interface = raw.interface;
    ips.push(ip);
  }
  const routes = Array.isArray(doc.routes)
    ? doc.routes.filter(isRecord).map((r) => ({ dst: String(r.dst ?? ''), ...(typeof r.gw === 'string' ? { gw: r.gw } : {}) }))
    : [];
  const dns = isRecord(doc.dns) ? (doc.dns as CniResult['dns']) : {};
  return { cniVersion, interfaces, ips, routes, dns };
}

/** A 0.1.0 / 0.2.0 result: `ip4` and `ip6`, each `{ ip, gateway?, routes? }`. */
function parseOldResult(doc: Record<string, unknown>, cniVersion: string): CniResult {
  const result: CniResult = { cniVersion, interfaces: [], ips: [], routes: [], dns: isRecord(doc.dns) ? (doc.dns as CniResult['dns']) : {} };
  for (const family of ['ip4', 'ip6'] as const) {
    const config = doc[family];
    if (config === undefined) continue;
    if (!isRecord(config) || typeof config.ip !== 'string' || isIP(config.ip.split('/')[0] ?? '') === 0) {
      throw new CniResultError(`the result has a malformed ${family}: ${JSON.stringify(config).slice(0, 100)}`);
    }
    result.ips.push({ address: config.ip, ...(typeof config.gateway === 'string' ? { gateway: config.gateway } : {}) });
    for (const r of Array.isArray(config.routes) ? config.routes.filter(isRecord) : []) {
      result.routes.push({ dst: String(r.dst ?? ''), ...(typeof r.gw === 'string' ? { gw: r.gw } : {}) });
    }
  }
  return result;
}

/**
 * The pod's IPs from a result, as CRI reports them: the first address the network gave is the
 * primary; then the first of the other family, if any (CRI's additional_ips hold the other
 * family only). Addresses on interfaces outside the pod (the host's bridge) are left out.
 */
export function podIpsOf(result: CniResult | undefined): string[] {
  if (!result) return [];
  const onHostSide = (ip: CniIp): boolean => {
    const iface = ip.interface === undefined ? undefined : result.interfaces[ip.interface];
    return iface !== undefined && iface.sandbox === undefined;
  };
  const inPod = result.ips.filter((ip) => !onHostSide(ip));
  const addresses = inPod.map((ip) => ip.address.split('/')[0]!);
  const primary = addresses[0];
  if (primary === undefined) return [];
  const other = addresses.find((a) => isIP(a) !== isIP(primary));
  return other === undefined ? [primary] : [primary, other];
}
