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
