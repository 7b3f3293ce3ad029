// The plugin used when --network-plugin is empty: Docker's own bridge network does the work.
// Pod IPs are the ones Docker gave the pause container; there is nothing to set up or tear down.
import type { NetworkHost, PodRef } from './network-host';
import type { NetworkPlugin, NetworkStatus, PodNetworkStatus } from './network-plugin';

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
