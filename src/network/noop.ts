// The plugin used when --network-plugin is empty: Docker's own bridge network does the work.
// Pod IPs are read from the pause container; there is nothing to set up or tear down.
import type { DockerClient } from '../docker/client';
import { DockerNotFoundError } from '../errors';
import type { NetworkPlugin, NetworkStatus, PodIps, PodNetworkTarget } from './plugin';

export class NoopNetworkPlugin implements NetworkPlugin {
  readonly name = 'noop';
  podCidr = '';

  constructor(private readonly docker: DockerClient) {}

  async setUpPod(_target: PodNetworkTarget): Promise<void> {}

  async tearDownPod(_target: PodNetworkTarget): Promise<void> {}

  async podIps(target: PodNetworkTarget): Promise<PodIps> {
    try {
      const inspect = await this.docker.inspectContainer(target.sandboxId);
      return { ips: ipsFromNetworkSettings(inspect.NetworkSettings) };
    } catch (err) {
      if (err instanceof DockerNotFoundError) return { ips: [] };
      throw err;
    }
  }

  setPodCidr(cidr: string): void {
    this.podCidr = cidr;
  }

  status(): NetworkStatus {
    return { ready: true };
  }
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
