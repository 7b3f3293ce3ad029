// The plugin used when --network-plugin is empty: Docker's own bridge network does the work.
// Pod IPs are the ones Docker gave the pause container; there is nothing to set up or tear down.
import type { NetworkHost, PodRef } from './host';
import type { NetworkPlugin, NetworkStatus, PodNetworkStatus } from './plugin';

export class NoopNetworkPlugin implements NetworkPlugin {
  readonly name = 'noop';
  readonly sandboxNetworkMode = 'default';

  constructor(private readonly host: Pick<NetworkHost, 'bridgeAddresses'>) {}

  async setUpPod(pod: PodRef): Promise<PodNetworkStatus> {
    return this.podStatus(pod);
  }

  async tearDownPod(_pod: PodRef): Promise<void> {}

  async podStatus(pod: PodRef): Promise<PodNetworkStatus> {
    return { ips: await this.host.bridgeAddresses(pod.sandboxId) };
  }

  podCidrsChanged(): void {}

  async status(): Promise<NetworkStatus> {
    return { ready: true };
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {}
}

interface NetworkSettingsLike {
  IPAddress?: string;
  GlobalIPv6Address?: string;
  Networks?: Record<string, { IPAddress?: string; GlobalIPv6Address?: string }>;
}

/** Primary IPv4 first, then any other addresses Docker reports, without duplicates. */
export function ipsFromNetworkSettings(settings: NetworkSettingsLike | undefined): string[] {
  if (!settings) return [];
  const ips: string[] = [];
  const add = (ip: string | undefined): void => {
    if (ip && !ips.includes(ip)) ips.push(ip);
  };
  add(settings.IPAddress);
  for (const net of Object.values(settings.Networks ?? {})) add(net.IPAddress);
  add(settings.GlobalIPv6Address);
  for (const net of Object.values(settings.Networks ?? {})) add(net.GlobalIPv6Address);
  return ips;
}
