import { isIP } from 'node:net';

/** "10.244.0.0/16" or "fd00::/64": an IP address and a prefix length that fits it. */
export function isCidr(text: string): boolean {
  const slash = text.indexOf('/');
  if (slash < 0) return false;
  const family = isIP(text.slice(0, slash));
  const bits = text.slice(slash + 1);
  if (family === 0 || !/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

/**
 * A pod CIDR setting as kubelet's UpdateRuntimeConfig and --pod-cidr carry it: one CIDR, or one
 * per family separated by commas; empty is none. `invalid` names the first part that is not a CIDR.
 */
export function splitCidrList(text: string): { cidrs: string[]; invalid?: string } {
  if (text.trim() === '') return { cidrs: [] };
  const cidrs = text.split(',').map((part) => part.trim());
  const invalid = cidrs.find((cidr) => !isCidr(cidr));
  return invalid === undefined ? { cidrs } : { cidrs, invalid };
}

/** "127.0.0.1:8080", "[::1]:0", "localhost:9100" as host and port; undefined when it is not host:port. */
export function parseHostPort(address: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(address);
  if (!m || Number(m[3]) > 65535) return undefined;
  return { host: m[1] ?? m[2]!, port: Number(m[3]) };
}
