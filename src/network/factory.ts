// Chooses the network plugin named by --network-plugin.
import type { Config } from '../config/flags';
import type { Logger } from '../util/logger';
import type { NetworkHost } from './host';
import { NoopNetworkPlugin } from './noop';
import type { NetworkPlugin } from './plugin';

export class NetworkPluginUnavailableError extends Error {}

export function createNetworkPlugin(config: Config, host: NetworkHost, _log: Logger): NetworkPlugin {
  switch (config.networkPlugin) {
    case 'noop':
      return new NoopNetworkPlugin(host);
    case 'cni':
    case 'kubenet':
      throw new NetworkPluginUnavailableError(
        `--network-plugin=${config.networkPlugin} is not built yet; leave the flag empty to use Docker's bridge network`,
      );
  }
}
