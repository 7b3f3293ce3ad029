// Chooses the network plugin named by --network-plugin.
import type { Config } from '../config/flags';
import type { Logger } from '../util/logger';
import type { NetworkHost } from './network-host';
import { CniNetworkPlugin } from './cni/cni-plugin';
import { KubenetNetworkPlugin } from './kubenet/kubenet-plugin';
import { NoopNetworkPlugin } from './noop-plugin';
import type { NetworkPlugin } from './network-plugin';

export function createNetworkPlugin(config: Config, host: NetworkHost, log: Logger): NetworkPlugin {
  switch (config.networkPlugin) {
    case 'noop':
      return new NoopNetworkPlugin(host);
    case 'cni':
      return new CniNetworkPlugin({ binDirs: config.cniBinDirs, confDir: config.cniConfDir, cacheDir: config.cniCacheDir }, host, log);
    case 'kubenet':
      return new KubenetNetworkPlugin(
        {
          binDirs: config.cniBinDirs,
          cacheDir: config.cniCacheDir,
          mtu: config.networkPluginMtu,
          hairpinMode: config.hairpinMode,
          nonMasqueradeCidr: config.nonMasqueradeCidr,
          dualStack: config.ipv6DualStack,
        },
        host,
        log,
      );
  }
}
