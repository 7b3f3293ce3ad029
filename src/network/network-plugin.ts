// The interface every pod network plugin implements (no-op: Docker's bridge; cni; kubenet).
// Plugins are driven only by the NetworkManager (./network-manager.ts), which keeps host-network pods
// away from them, serialises work per pod, and logs and counts every call. What they need to
// know about a pod beyond its identity they ask of the NetworkHost (./network-host.ts).
import type { PodDns, PodRef } from './network-host';

export interface PodNetworkStatus {
  /** The primary IP first, then the other family's; empty when the plugin knows none. */
  ips: string[];
}

/** The reason a NetworkReady condition of false gives (kubelet shows it on the node). */
export const NETWORK_NOT_READY = 'NetworkPluginNotReady';

export interface NetworkStatus {
  ready: boolean;
  reason?: string;
  message?: string;
}

/**
 * How Docker wires a non-host-network pause container: its own default bridge (`default`), or
 * no network at all (`none`), leaving the namespace to the plugin.
 */
export type SandboxNetworkMode = 'default' | 'none';

export interface NetworkPlugin {
  readonly name: string;
  readonly sandboxNetworkMode: SandboxNetworkMode;
  /** Wires up a started sandbox. Throwing makes RunPodSandbox roll back (after tearDownPod). */
  setUpPod(pod: PodRef, dns: PodDns | undefined, signal?: AbortSignal): Promise<PodNetworkStatus>;
  /** Releases what setUpPod took. Succeeds when called again, for a pod it never saw, or with the namespace gone. */
  tearDownPod(pod: PodRef, signal?: AbortSignal): Promise<void>;
  /** The pod's IPs as the plugin knows them (they survive a shim restart). */
  podStatus(pod: PodRef): Promise<PodNetworkStatus>;
  /** UpdateRuntimeConfig changed the node's pod CIDRs. */
  podCidrsChanged(cidrs: readonly string[]): void;
  /** Whether pods can be networked; answers promptly (Status asks it every few seconds). */
  status(signal?: AbortSignal): Promise<NetworkStatus>;
  /** Called once the shim can see its pods, to restore what a restart lost (held host ports). */
  start(): Promise<void>;
  close(): Promise<void>;
}
