// Readings of Docker documents whose shape differs between the engines the shim supports (API
// 1.41 to 1.51, docs/docker-api.md): each field that moved or went away is read in one place,
// here, so every caller sees both shapes alike. Pure.
import type { ContainerInspect } from './types';

/**
 * The container's writable layer directory (overlay2's `UpperDir`), or undefined where Docker
 * does not name one: a graph driver that has none (vfs), Docker's containerd image store
 * (`GraphDriver.Data` null up to API 1.51, `GraphDriver` left out from 1.52), a dead container.
 */
export function writableLayerDir(inspect: Pick<ContainerInspect, 'GraphDriver'>): string | undefined {
  const data: unknown = (inspect.GraphDriver as { Data?: unknown } | null | undefined)?.Data;
  if (typeof data !== 'object' || data === null) return undefined;
  const upper = (data as Record<string, unknown>).UpperDir;
  // Docker names it by absolute path; anything else is not a directory we could read.
  return typeof upper === 'string' && upper.startsWith('/') ? upper : undefined;
}

/** The part of NetworkSettings addresses are read from; the top-level fields are API 1.21's, deprecated since. */
export interface NetworkSettingsLike {
  IPAddress?: string;
  GlobalIPv6Address?: string;
  Networks?: Record<string, { IPAddress?: string; GlobalIPv6Address?: string }> | null;
}

/**
 * A container's addresses: primary IPv4 first, then any other Docker reports, without
 * duplicates. The top-level IPAddress and GlobalIPv6Address (the default network's, given up to
 * API 1.51, left out from 1.52) only order them: every address is in Networks too.
 */
export function ipsFromNetworkSettings(settings: NetworkSettingsLike | null | undefined): string[] {
  if (!settings) return [];
  const ips: string[] = [];
  const add = (ip: string | undefined): void => {
    if (ip && !ips.includes(ip)) ips.push(ip);
  };
  const networks = Object.values(settings.Networks ?? {});
  add(settings.IPAddress);
  for (const net of networks) add(net.IPAddress);
  add(settings.GlobalIPv6Address);
  for (const net of networks) add(net.GlobalIPv6Address);
  return ips;
}
