// Everything an RPC handler may use, built once at start-up (see ../app.ts) and passed to
// each handler as its first argument. All process-wide state lives here: no module keeps its
// own store beside it.
import type { CheckpointCache } from '../checkpoint/checkpoint-cache';
import type { CgroupSetup } from '../cgroups/driver';
import type { Config } from '../config/flags';
import type { ContainerEventHub } from '../container-events/builder';
import type { CredentialSource } from '../credentials/providers';
import type { DockerClient } from '../docker/client';
import type { OomKills } from '../docker-cache/container-documents';
import type { ObjectFinder } from '../object-store/object-store';
import type { DockerFacts } from '../docker/docker-version';
import type { DockerLiveness } from '../docker/liveness';
import type { ContainerLogManager } from '../logs/log-manager';
import type { NetworkManager } from '../network/network-manager';
import type { ListAnswers } from './support/list-answers';
import type { ExecOutputPool } from './container/support/capped-output';
import type { PodMetricsCollector } from '../pod-metrics/metrics-collector';
import type { StatsCollector } from '../stats/stats-collector';
import type { DockerStorage } from '../storage/docker-storage';
import type { StreamingServer } from '../streaming/streaming-server';
import type { ShimMetrics } from '../telemetry/metrics';
import type { KeyedLock } from '../util/keyed-lock';
import type { SingleFlight } from '../util/single-flight';
import type { Logger } from '../util/logger';

export interface ShimContext {
  readonly config: Config;
  /**
   * Docker as handlers reach it: inspects answered by the state cache, changes followed by it
   * (see ../docker-cache). Objects are found through `objects`, never by a list of this client's.
   */
  readonly dockerCached: DockerClient;
  /** The shim's sandboxes and containers, found by the typed query: from the state cache while synced, else one Docker list (see ../object-store). */
  readonly objects: ObjectFinder;
  /** The OOM kills the state cache heard of from Docker's events, which Docker's flag can miss (see ../docker-cache). */
  readonly oomKills: OomKills;
  readonly dockerFacts: DockerFacts;
  /** Whether Docker answers, for Status: one ping at a time, answered within a second (see ../docker/liveness). */
  readonly dockerLiveness: DockerLiveness;
  readonly cgroups: CgroupSetup;
  /** Pod networking: the plugin --network-plugin chose, behind the manager (see ../network). */
  readonly network: NetworkManager;
  /** Where pulls find registry credentials when the request carries none. */
  readonly credentials: CredentialSource;
  readonly log: Logger;
  /** Sandbox checkpoints under the root directory, held in memory (see ../checkpoint). */
  readonly checkpoints: CheckpointCache;
  /** Serialises the sandbox RPCs per sandbox ID (stop, remove, update) or per Docker name (run). */
  readonly sandboxLocks: KeyedLock;
  /** Writes each container's CRI log (see ../logs). */
  readonly logs: ContainerLogManager;
  /** What Docker's storage takes (images, writable layers), measured in the background (see ../storage). */
  readonly storage: DockerStorage;
  /** Reads container and pod figures from cgroup files (see ../stats). */
  readonly stats: StatsCollector;
  /** Reads the figures behind ListPodSandboxMetrics from the kernel (see ../pod-metrics). */
  readonly podMetrics: PodMetricsCollector;
  /** Overlapping identical stats and metrics reads share one computation, stopped when all their callers are gone. */
  readonly sharedReads: SingleFlight;
  /** The output bytes all ExecSync calls together may hold past their own share (see ./container/support/capped-output.ts). */
  readonly execOutput: ExecOutputPool;
  /** ListPodSandbox and ListContainers answers, kept while nothing they are built from changed. */
  readonly listAnswers: ListAnswers;
  /** The exec/attach/port-forward server whose URLs Exec, Attach and PortForward answer (see ../streaming). */
  readonly streaming: StreamingServer;
  /** The container and sandbox transitions GetContainerEvents streams (see ../container-events). */
  readonly containerEvents: ContainerEventHub;
  /** The shim's own Prometheus registry and recorders; undefined without --metrics-bind-addr (see ../telemetry). */
  readonly metrics: ShimMetrics | undefined;
}

/** The shim's own version, reported by --version and in verbose Status. */
export const SHIM_VERSION: string = (require('../../../package.json') as { version: string }).version;
