// Everything an RPC handler may use, built once at start-up (see ../app.ts) and passed to
// each handler as its first argument.
import type { CgroupSetup } from '../cgroups/driver';
import type { Config } from '../config/flags';
import type { CredentialSource } from '../credentials/providers';
import type { DockerClient } from '../docker/client';
import type { DockerFacts } from '../docker/version';
import type { EventHub } from '../events/hub';
import type { ContainerEventResponse } from '../cri/types';
import type { ContainerChange } from '../state/container-store';
import type { ContainerLogManager } from '../logs/manager';
import type { NetworkPlugin } from '../network/plugin';
import type { StreamingServer } from '../streaming/server';
import type { Logger } from '../util/logger';

export interface ShimContext {
  readonly config: Config;
  readonly docker: DockerClient;
  readonly dockerFacts: DockerFacts;
  readonly cgroups: CgroupSetup;
  readonly network: NetworkPlugin;
  /** Where pulls find registry credentials when the request carries none. */
  readonly credentials: CredentialSource;
  readonly log: Logger;
  /** Writes each container's CRI log (see ../logs). */
  readonly logs: ContainerLogManager;
  /** The exec/attach/port-forward server whose URLs Exec, Attach and PortForward answer (see ../streaming). */
  readonly streaming: StreamingServer;
  /** The container and sandbox transitions GetContainerEvents streams (see ../events). */
  readonly containerEvents: EventHub<ContainerChange, ContainerEventResponse>;
}

/** The shim's own version, reported by --version and in verbose Status. */
export const SHIM_VERSION: string = (require('../../../package.json') as { version: string }).version;
