// A pod's CNI attachments, for every plugin built on CNI (cni, kubenet): loopback then the pod
// network on set-up; on tear-down, DEL of whatever the cache says was attached (else of the
// current network, which still releases an address IPAM holds); the pod's IPs from the last
// result, which survives a shim restart in the cache.
import type { NetworkHost, PodDns, PodRef } from '../network-host';
import { errorMessage, UnavailableError } from '../../errors';
import type { Logger } from '../../util/logger';
import { capabilityArgs, cniArgs } from './args';
import { parseNetworkConfig, type NetworkConfigList } from './cni-config';
import type { CachedAttachment } from './cni-cache';
import { podIpsOf, type CniResult } from './result';
import { CniRuntime, type Attachment, type CniRuntimeOptions } from './runtime';

/** The pod's interface, as kubelet and every CNI runtime name it. */
const POD_IFNAME = 'eth0';
const LOOPBACK_IFNAME = 'lo';
/** How many recently released pods are remembered (Remove follows Stop). */
const RELEASED_REMEMBERED = 4096;

export class PodAttachments {
  readonly runtime: CniRuntime;
  /** Results of pods set up by this process; others are read from the cache. */
  private readonly results = new Map<string, CniResult>();
  /** Pods this process released already, so RemovePodSandbox after StopPodSandbox runs no plugin. */
  private readonly released = new Set<string>();

  constructor(
    options: CniRuntimeOptions,
    private readonly host: NetworkHost,
    private readonly log: Logger,
  ) {
    this.runtime = new CniRuntime(options);
  }

  async setUp(network: NetworkConfigList, pod: PodRef, dns: PodDns | undefined, signal?: AbortSignal): Promise<CniResult> {
    const netns = await this.host.netnsPath(pod.sandboxId);
    if (netns === undefined) throw new UnavailableError(`pod ${pod.podNamespace}/${pod.podName} has no running pause process to set up`);
    const args = cniArgs(pod);
    this.released.delete(pod.sandboxId);
    await this.runtime.add(loopbackNetwork(network.cniVersion), { containerId: pod.sandboxId, netns, ifName: LOOPBACK_IFNAME, args, capabilityArgs: {} }, signal);
    const capabilities = capabilityArgs(pod, this.host.portMappings(pod.sandboxId), this.host.podCidrs(), dns);
    const result = await this.runtime.add(network, { containerId: pod.sandboxId, netns, ifName: POD_IFNAME, args, capabilityArgs: capabilities }, signal);
    this.results.set(pod.sandboxId, result);
    return result;
  }

  /**
   * DEL of what the cache says the pod has, each with the result its ADD left (or got to before
   * a crash). Where the pod network has no usable entry (none, torn, foreign, or a config that
   * cannot be read), DEL with `current` and no previous result still releases what IPAM holds;
   * an unusable file goes once that DEL succeeded.
   */
  async tearDown(pod: PodRef, current: NetworkConfigList | undefined, signal?: AbortSignal): Promise<void> {
    this.results.delete(pod.sandboxId);
    const netns = (await this.host.netnsPath(pod.sandboxId)) ?? '';
    let podNetworkCached = false;
    const unusable: string[] = [];
    for (const ifName of [POD_IFNAME, LOOPBACK_IFNAME]) {
      for (const read of this.runtime.cache.read(pod.sandboxId, ifName)) {
        let network: NetworkConfigList | undefined;
        let problem = read.problem;
        if (read.entry) {
          try {
            network = parseNetworkConfig(`cache of ${read.entry.networkName}`, Buffer.from(read.entry.config, 'base64').toString('utf8'), 'cached');
          } catch (err) {
            problem = errorMessage(err);
          }
        }
        if (problem !== undefined) this.log.warn({ sandboxId: pod.sandboxId, file: read.file, problem }, 'a CNI cache file cannot be used as it is; its DEL goes without it');
        if (!read.entry || !network) {
          unusable.push(read.file);
          continue;
        }
        if (ifName === POD_IFNAME && !isLoopbackOnly(network)) podNetworkCached = true;
        const att: Attachment = { containerId: pod.sandboxId, netns, ifName, args: read.entry.cniArgs, capabilityArgs: read.entry.capabilityArgs };
        await this.runtime.del(network, att, read.entry.result ?? read.entry.partialResult, signal);
      }
    }
    if (!podNetworkCached && !this.released.has(pod.sandboxId) && current) {
      // Nothing usable cached (set up by something else, or the cache was lost): DEL with
      // today's network still releases what the IPAM plugin holds for this container.
      const att: Attachment = {
        containerId: pod.sandboxId,
        netns,
        ifName: POD_IFNAME,
        args: cniArgs(pod),
        capabilityArgs: capabilityArgs(pod, this.host.portMappings(pod.sandboxId), this.host.podCidrs(), undefined),
      };
      await this.runtime.del(current, att, undefined, signal);
    }
    for (const file of unusable) this.runtime.cache.removeFile(file);
    this.released.add(pod.sandboxId);
    if (this.released.size > RELEASED_REMEMBERED) this.released.delete(this.released.values().next().value!);
  }

  /** The last ADD result of the pod's network, if it has one. */
  resultOf(sandboxId: string): CniResult | undefined {
    return this.results.get(sandboxId) ?? this.podNetworkEntry(sandboxId)?.result;
  }

  /**
   * The cache entry of the pod network's finished ADD: of eth0's entries, not a loopback one
   * (cri-dockerd, as dockershim did, attached its loopback with interface eth0 too).
   */
  podNetworkEntry(sandboxId: string): (CachedAttachment & { result: CniResult }) | undefined {
    return this.runtime.cache
      .forContainer(sandboxId, POD_IFNAME)
      .find((e): e is CachedAttachment & { result: CniResult } => e.result !== undefined && !isLoopbackEntry(e));
  }

  ipsOf(sandboxId: string): string[] {
    return podIpsOf(this.resultOf(sandboxId));
  }

  /** CHECK of the pod's network (spec 0.4.0 and later): throws what a plugin finds wrong. */
  async check(pod: PodRef, signal?: AbortSignal): Promise<void> {
    const entry = this.podNetworkEntry(pod.sandboxId);
    const netns = await this.host.netnsPath(pod.sandboxId);
    if (!entry?.result || netns === undefined) throw new UnavailableError(`pod ${pod.podNamespace}/${pod.podName} has no network to check`);
    const network = parseNetworkConfig(`cache of ${entry.networkName}`, Buffer.from(entry.config, 'base64').toString('utf8'), 'cached');
    await this.runtime.check(network, { containerId: pod.sandboxId, netns, ifName: POD_IFNAME, args: entry.cniArgs, capabilityArgs: entry.capabilityArgs }, entry.result, signal);
  }
}

/** A network of loopback plugins only: the pod's loopback, whatever interface it was cached under. */
export function isLoopbackOnly(network: Pick<NetworkConfigList, 'plugins'>): boolean {
  return network.plugins.every((p) => p.type === 'loopback');
}

/** Whether a cache entry is a loopback attachment; false when its config cannot be read. */
export function isLoopbackEntry(entry: Pick<CachedAttachment, 'config' | 'networkName'>): boolean {
  try {
    return isLoopbackOnly(parseNetworkConfig(`cache of ${entry.networkName}`, Buffer.from(entry.config, 'base64').toString('utf8'), 'cached'));
  } catch {
    return false;
  }
}

/** The loopback network every pod gets, in the pod network's spec version. */
export function loopbackNetwork(cniVersion: string): NetworkConfigList {
  const doc = { cniVersion, name: 'cni-loopback', plugins: [{ type: 'loopback' }] };
  return { name: doc.name, cniVersion, plugins: doc.plugins, source: 'built in', bytes: JSON.stringify(doc) };
}
