// The seam between pod lifecycle and pod networking. RunPodSandbox, StopPodSandbox and
// PodSandboxStatus call these; which implementation runs is chosen by --network-plugin.

/** What a plugin needs to know about the pod whose network it manages. */
export interface PodNetworkTarget {
  podName: string;
  podNamespace: string;
  podUid: string;
  /** The pause container's Docker ID (its network namespace is the pod's). */
  sandboxId: string;
  annotations: Readonly<Record<string, string>>;
}

export interface PodIps {
  /** The primary IP first; empty when the pod has no IP of its own (host network, no-op plugin before start). */
  ips: string[];
}

export interface NetworkStatus {
  ready: boolean;
  reason?: string;
  message?: string;
}

export interface NetworkPlugin {
  readonly name: string;
  /** Wires up a started sandbox. Throwing makes RunPodSandbox roll back. */
  setUpPod(target: PodNetworkTarget): Promise<void>;
  /** Releases what setUpPod took. Must succeed when called again or for a pod it never saw. */
  tearDownPod(target: PodNetworkTarget): Promise<void>;
  /** The pod's IPs as the plugin knows them. */
  podIps(target: PodNetworkTarget): Promise<PodIps>;
  /** kubelet's UpdateRuntimeConfig hands the node's pod CIDR here. */
  setPodCidr(cidr: string): void;
  /** The last pod CIDR received ('' before any). */
  readonly podCidr: string;
  status(): NetworkStatus;
}
