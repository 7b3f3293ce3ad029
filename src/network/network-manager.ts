// Between the sandbox RPCs and the network plugin. It owns the host-network rule (such pods
// use the node's network: Docker's `host` mode, no plugin call, the node's addresses), runs
// one network operation per pod at a time, and is where every plugin call is timed, logged
// and counted. Sandbox code calls this, never a plugin.
import { errorMessage } from '../errors';
import { KeyedLock } from '../util/keyed-lock';
import type { Logger } from '../util/logger';
import type { DockerNetworkHost } from './docker-host';
import type { PodDns, PodRef } from './network-host';
import { hostAddresses } from './host-addresses';
import type { NetworkPlugin, NetworkStatus } from './network-plugin';

/** What the manager needs to know of a pod besides who it is. */
export interface PodNetworkFacts {
  hostNetwork: boolean;
}

export type NetworkOperation = 'setUp' | 'tearDown' | 'status';

export interface OperationCounts {
  /** Started, including those still running. */
  calls: number;
  succeeded: number;
  failures: number;
  totalMs: number;
}

export class NetworkManager {
  private readonly podLocks = new KeyedLock();
  private readonly counts: Record<NetworkOperation, OperationCounts> = {
    setUp: { calls: 0, succeeded: 0, failures: 0, totalMs: 0 },
    tearDown: { calls: 0, succeeded: 0, failures: 0, totalMs: 0 },
    status: { calls: 0, succeeded: 0, failures: 0, totalMs: 0 },
  };

  constructor(
    readonly plugin: NetworkPlugin,
    private readonly host: Pick<DockerNetworkHost, 'podCidrs' | 'setPodCidrs'>,
    private readonly log: Logger,
    private readonly nodeAddresses: () => string[] = hostAddresses,
  ) {}

  get pluginName(): string {
    return this.plugin.name;
  }

  /** Docker's NetworkMode for a pod's pause container; undefined is Docker's default bridge. */
  dockerNetworkMode(pod: PodNetworkFacts): 'host' | 'none' | undefined {
    if (pod.hostNetwork) return 'host';
    return this.plugin.sandboxNetworkMode === 'none' ? 'none' : undefined;
  }

  /** Whether Docker itself publishes the pod's host ports (only on its own bridge). */
  dockerPublishesPorts(pod: PodNetworkFacts): boolean {
    return this.dockerNetworkMode(pod) === undefined;
  }

  async setUpPod(pod: PodRef, facts: PodNetworkFacts, dns: PodDns | undefined, signal?: AbortSignal): Promise<void> {
    if (facts.hostNetwork) return;
    await this.podLocks.run(pod.sandboxId, () => this.timed('setUp', pod, () => this.plugin.setUpPod(pod, dns, signal)));
  }

  async tearDownPod(pod: PodRef, facts: PodNetworkFacts, signal?: AbortSignal): Promise<void> {
    if (facts.hostNetwork) return;
    await this.podLocks.run(pod.sandboxId, () => this.timed('tearDown', pod, () => this.plugin.tearDownPod(pod, signal)));
  }

  /** The pod's IPs, primary first: the node's for host-network pods, else the plugin's. */
  async podIps(pod: PodRef, facts: PodNetworkFacts): Promise<string[]> {
    if (facts.hostNetwork) return this.nodeAddresses();
    return (await this.timed('status', pod, () => this.plugin.podStatus(pod), 'debug')).ips;
  }

  /** UpdateRuntimeConfig's pod CIDR: one CIDR, or one per family separated by commas. */
  setPodCidrs(cidrs: readonly string[]): void {
    this.host.setPodCidrs(cidrs);
    this.plugin.podCidrsChanged(cidrs);
  }

  get podCidrs(): readonly string[] {
    return this.host.podCidrs();
  }

  status(signal?: AbortSignal): Promise<NetworkStatus> {
    return this.plugin.status(signal);
  }

  /** Calls and failures per operation since start, with their total time. */
  operationCounts(): Readonly<Record<NetworkOperation, Readonly<OperationCounts>>> {
    return this.counts;
  }

  /** Lets the plugin restore what a restart lost; failures are logged, pods keep running. */
  async start(): Promise<void> {
    try {
      await this.plugin.start();
    } catch (err) {
      this.log.error({ plugin: this.plugin.name, error: errorMessage(err) }, 'network plugin could not restore its state');
    }
  }

  close(): Promise<void> {
    return this.plugin.close();
  }

  private async timed<T>(op: NetworkOperation, pod: PodRef, work: () => Promise<T>, level: 'info' | 'debug' = 'info'): Promise<T> {
    const started = process.hrtime.bigint();
    const counts = this.counts[op];
    counts.calls++;
    const fields = { plugin: this.plugin.name, op, sandboxId: pod.sandboxId, pod: `${pod.podNamespace}/${pod.podName}` };
    try {
      const result = await work();
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      counts.totalMs += durationMs;
      counts.succeeded++;
      this.log[level]({ ...fields, durationMs }, 'pod network operation done');
      return result;
    } catch (err) {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      counts.totalMs += durationMs;
      counts.failures++;
      this.log.warn({ ...fields, durationMs, error: errorMessage(err) }, 'pod network operation failed');
      throw err;
    }
  }
}
