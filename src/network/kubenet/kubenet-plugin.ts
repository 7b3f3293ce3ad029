// The `kubenet` network plugin, as kubelet's kubenet made it: a bridge (cbr0) over the node's
// pod CIDRs (one, or one per family, from UpdateRuntimeConfig) with host-local addresses,
// loopback, a default route per family and the bridge's MTU; bandwidth shaping through the
// `bandwidth` CNI plugin; host ports as iptables NAT rules of our own (../hostport); masquerade
// outside --non-masquerade-cidr and FORWARD accept rules for the pod CIDRs (./kubenet-rules.ts), which
// Docker's FORWARD policy of DROP would otherwise need. Not ready until a pod CIDR is known.
import type { HairpinMode } from '../../config/flags';
import { errorMessage, UnavailableError } from '../../errors';
import type { Logger } from '../../util/logger';
import { PodAttachments } from '../libcni/attachments';
import type { NetworkConfigList } from '../libcni/cni-config';
import { DEFAULT_PLUGIN_TIMEOUT_MS } from '../libcni/runtime';
import { podIpsOf } from '../libcni/result';
import type { NetworkHost, PodDns, PodRef } from '../network-host';
import { HostportManager } from '../hostport/hostport-manager';
import { hostRunner, type CommandRunner } from '../hostport/runner';
import { NETWORK_NOT_READY, type NetworkPlugin, type NetworkStatus, type PodNetworkStatus } from '../network-plugin';
import { hairpinPlan } from './hairpin';
import { resolveMtu } from './mtu';
import { applyKubenetRules } from './kubenet-rules';

export const KUBENET_BRIDGE = 'cbr0';
const NETWORK_NAME = 'kubenet';
const REQUIRED_PLUGINS = ['bridge', 'host-local', 'loopback', 'bandwidth'];

interface KubenetOptions {
  binDirs: readonly string[];
  cacheDir: string;
  /** --network-plugin-mtu; 0 detects it. */
  mtu: number;
  hairpinMode: HairpinMode;
  nonMasqueradeCidr: string;
  /**
   * --ipv6-dual-stack: pods get an address from each pod CIDR kubelet sends; without it, from the
   * first only (cri-dockerd's rule, so a node moved from it keeps its single-stack pods).
   */
  dualStack?: boolean;
  /** host-local's data directory; its own default (/var/lib/cni/networks) when undefined. */
  ipamDataDir?: string;
  runner?: CommandRunner;
  timeoutMs?: number;
}

/** kubenet's bridge network over the pod CIDRs (pure). */
export function kubenetNetwork(podCidrs: readonly string[], mtu: number, hairpinMode: HairpinMode, ipamDataDir: string | undefined): NetworkConfigList {
  const hairpin = hairpinPlan(hairpinMode);
  const ranges = podCidrs.map((subnet) => [{ subnet }]);
  const routes = podCidrs.map((c) => ({ dst: c.includes(':') ? '::/0' : '0.0.0.0/0' }));
  const ipam: Record<string, unknown> = { type: 'host-local', ranges, routes };
  if (ipamDataDir) ipam.dataDir = ipamDataDir;
  const doc = {
    cniVersion: '1.0.0',
    name: NETWORK_NAME,
    plugins: [
      { type: 'bridge', bridge: KUBENET_BRIDGE, mtu, isGateway: true, ipMasq: false, hairpinMode: hairpin.vethHairpin, promiscMode: hairpin.bridgePromisc, ipam },
      { type: 'bandwidth', capabilities: { bandwidth: true } },
    ],
  };
  return { name: doc.name, cniVersion: doc.cniVersion, plugins: doc.plugins, source: 'kubenet', bytes: JSON.stringify(doc) };
}

export class KubenetNetworkPlugin implements NetworkPlugin {
  readonly name = 'kubenet';
  readonly sandboxNetworkMode = 'none';
  private readonly attachments: PodAttachments;
  private readonly runner: CommandRunner;
  readonly hostports: HostportManager;
  private network: NetworkConfigList | undefined;
  /** The node-wide rules for the current pod CIDRs: written once per change of CIDR. */
  private rules: Promise<void> = Promise.resolve();
  private rulesError: string | undefined;

  constructor(
    private readonly options: KubenetOptions,
    private readonly host: NetworkHost,
    private readonly log: Logger,
  ) {
    this.runner = options.runner ?? hostRunner;
    this.attachments = new PodAttachments({ binDirs: options.binDirs, cacheDir: options.cacheDir, timeoutMs: options.timeoutMs ?? DEFAULT_PLUGIN_TIMEOUT_MS }, host, log);
    this.hostports = new HostportManager({ runner: this.runner, natInterface: KUBENET_BRIDGE, logger: log });
  }

  async status(): Promise<NetworkStatus> {
    const problem = this.problem();
    return problem === undefined ? { ready: true } : { ready: false, reason: NETWORK_NOT_READY, message: problem };
  }

  private problem(): string | undefined {
    const missing = REQUIRED_PLUGINS.filter((p) => !this.attachments.runtime.binaryOf(p));
    if (missing.length > 0) return `kubenet needs the CNI plugins ${missing.join(', ')} in ${this.options.binDirs.join(', ')}`;
    if (this.podCidrs().length === 0) return 'kubenet has no pod CIDR yet (UpdateRuntimeConfig gives it)';
    if (this.rulesError) return `kubenet could not write its iptables rules: ${this.rulesError}`;
    return undefined;
  }

  /** The pod CIDRs kubenet uses: kubelet's, or their first without --ipv6-dual-stack. */
  private podCidrs(): readonly string[] {
    const all = this.host.podCidrs();
    return this.options.dualStack ? all : all.slice(0, 1);
  }

  podCidrsChanged(given: readonly string[]): void {
    const cidrs = this.podCidrs();
    if (cidrs.length < given.length) {
      this.log.warn({ podCidrs: given, used: cidrs }, 'kubenet: this node has several pod CIDRs and --ipv6-dual-stack is off; only the first is used');
    }
    this.network = undefined;
    this.rules = this.rules
      .then(() => applyKubenetRules(this.runner, { podCidrs: cidrs, nonMasqueradeCidr: this.options.nonMasqueradeCidr }))
      .then(
        () => {
          this.rulesError = undefined;
          this.log.info({ podCidrs: cidrs }, 'kubenet: masquerade and forward rules in place');
        },
        (err: unknown) => {
          this.rulesError = errorMessage(err);
          this.log.error({ podCidrs: cidrs, error: this.rulesError }, 'kubenet: cannot write its iptables rules');
        },
      );
  }

  /** Host ports of pods that still run, held again after a restart (their rules are still in the kernel). */
  async start(): Promise<void> {
    const pods = await this.host.runningSandboxes();
    const report = await this.hostports.syncAll(pods.map((id) => ({ sandboxId: id, ips: this.attachments.ipsOf(id), portMappings: this.host.portMappings(id) })));
    this.log.info({ pods: pods.length, ...report }, 'kubenet: host ports synced');
  }

  private async currentNetwork(): Promise<NetworkConfigList> {
    if (!this.network) {
      const mtu = await resolveMtu(this.runner, this.options.mtu);
      this.network = kubenetNetwork(this.podCidrs(), mtu.mtu, this.options.hairpinMode, this.options.ipamDataDir);
      this.log.info({ podCidrs: this.podCidrs(), mtu: mtu.mtu, mtuFrom: mtu.from ?? 'fallback' }, 'kubenet network');
    }
    return this.network;
  }

  async setUpPod(pod: PodRef, dns: PodDns | undefined, signal?: AbortSignal): Promise<PodNetworkStatus> {
    await this.rules;
    const problem = this.problem();
    if (problem !== undefined) throw new UnavailableError(`the pod network is not ready: ${problem}`);
    const result = await this.attachments.setUp(await this.currentNetwork(), pod, dns, signal);
    const ips = podIpsOf(result);
    const portMappings = this.host.portMappings(pod.sandboxId);
    if (portMappings.some((m) => m.hostPort > 0)) {
      try {
        await this.hostports.add({ sandboxId: pod.sandboxId, ips, portMappings });
      } catch (err) {
        await this.attachments.tearDown(pod, this.network).catch(() => undefined);
        throw err;
      }
    }
    return { ips };
  }

  async tearDownPod(pod: PodRef, signal?: AbortSignal): Promise<void> {
    await this.hostports.remove(pod.sandboxId);
    await this.attachments.tearDown(pod, this.podCidrs().length > 0 ? await this.currentNetwork() : undefined, signal);
  }

  async podStatus(pod: PodRef): Promise<PodNetworkStatus> {
    return { ips: this.attachments.ipsOf(pod.sandboxId) };
  }

  async close(): Promise<void> {
    // The rules stay: running pods keep their network and host ports while the shim restarts.
    await this.rules;
  }
}
