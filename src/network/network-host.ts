// What a network plugin may ask of the shim about a pod, and nothing more: plugins never see a
// Docker client. ./docker-host.ts implements it over the sandbox checkpoints (port mappings
// survive restarts there) and the pause container's process (its network namespace).
import type { CheckpointPortMapping } from '../checkpoint/checkpoint';

export type PortMapping = CheckpointPortMapping;

/** The pod's DNS settings as RunPodSandbox gave them (CNI's `dns` runtime capability). */
export interface PodDns {
  servers: string[];
  searches: string[];
  options: string[];
}

/** Who a pod is, as plugins and their logs name it. */
export interface PodRef {
  podName: string;
  podNamespace: string;
  podUid: string;
  /** The pause container's full Docker ID. */
  sandboxId: string;
  annotations: Readonly<Record<string, string>>;
}

export interface NetworkHost {
  /**
   * The pod's network namespace, `/proc/<pause pid>/ns/net`, while its pause process runs;
   * undefined once it is gone (tear-down must still release what set-up took).
   */
  netnsPath(sandboxId: string): Promise<string | undefined>;
  /** The pod's port mappings, from its checkpoint ([] when it has none). */
  portMappings(sandboxId: string): readonly PortMapping[];
  /** The pod CIDRs UpdateRuntimeConfig gave, at most one per address family; [] before any. */
  podCidrs(): readonly string[];
  /** The addresses Docker's own bridge network gave the pause container (the no-op plugin's answer). */
  bridgeAddresses(sandboxId: string): Promise<string[]>;
  /** The IDs of the pods whose pause container runs (for plugins that restore state after a restart). */
  runningSandboxes(): Promise<string[]>;
}
