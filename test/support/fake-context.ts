// A ShimContext for handler unit tests without Docker: the fake Docker of ./fake-docker, and
// otherwise the shim's own parts wherever they need no daemon: the config from the real flag
// parser, a real CheckpointCache over a temp root directory, KeyedLock, ContainerLogManager,
// the no-op network plugin behind the real NetworkManager, DockerFacts, a silent pino logger. Two seams let a test make a
// step fail: the checkpoint store's writes and the network plugin's set-up.
import * as fs from 'node:fs';
import { CheckpointCache } from '../../src/checkpoint/checkpoint-cache';
import type { SandboxCheckpoint } from '../../src/checkpoint/checkpoint';
import { CheckpointFiles } from '../../src/checkpoint/checkpoint-files';
import { parseFlags } from '../../src/config/flags';
import type { ContainerEventHub } from '../../src/container-events/builder';
import { EventHub } from '../../src/container-events/hub';
import type { CredentialSource } from '../../src/credentials/providers';
import type { CallContext } from '../../src/cri/types';
import { DockerFacts } from '../../src/docker/docker-version';
import { ContainerLogManager } from '../../src/logs/log-manager';
import { NoopNetworkPlugin } from '../../src/network/noop-plugin';
import { DockerNetworkHost } from '../../src/network/docker-host';
import { NetworkManager } from '../../src/network/network-manager';
import type { PodNetworkStatus } from '../../src/network/network-plugin';
import type { PodRef } from '../../src/network/network-host';
import type { ShimContext } from '../../src/shim/context';
import { CgroupReader } from '../../src/cgroups/reader';
import { ExecOutputPool } from '../../src/shim/container/support/capped-output';
import { ListAnswers } from '../../src/shim/support/list-answers';
import { StatsCollector } from '../../src/stats/stats-collector';
import { DockerLiveness } from '../../src/docker/liveness';
import { PodMetricsCollector } from '../../src/pod-metrics/metrics-collector';
import { DockerStorage } from '../../src/storage/docker-storage';
import { ShimObjectStore } from '../../src/object-store/object-store';
import { StreamingServer } from '../../src/streaming/streaming-server';
import { KeyedLock } from '../../src/util/keyed-lock';
import { SingleFlight } from '../../src/util/single-flight';
import { silentLogger } from '../../src/util/logger';
import { FAKE_DOCKER_VERSION, FakeDocker } from './fake-docker';
import { tempDir } from './temp';

/** The pause image the fake context's config names (present in a fresh fake Docker). */
export const FAKE_PAUSE_IMAGE = 'registry.test/pause:3.10';

/** The real checkpoint store, with a write failure a test can arm. */
export class FaultyCheckpointStore extends CheckpointFiles {
  /** The next write fails with this (once), before anything reaches the disk. */
  failNextWrite: Error | undefined;

  override async write(checkpoint: SandboxCheckpoint): Promise<void> {
    const err = this.failNextWrite;
    this.failNextWrite = undefined;
    if (err) throw err;
    return super.write(checkpoint);
  }
}

/** The no-op plugin, recording what it is asked, with a set-up failure a test can arm. */
export class RecordingNetwork extends NoopNetworkPlugin {
  readonly calls: Array<{ step: 'setUp' | 'tearDown'; sandboxId: string }> = [];
  /** The next setUpPod fails with this (once). */
  failNextSetUp: Error | undefined;

  override async setUpPod(target: PodRef): Promise<PodNetworkStatus> {
    this.calls.push({ step: 'setUp', sandboxId: target.sandboxId });
    const err = this.failNextSetUp;
    this.failNextSetUp = undefined;
    if (err) throw err;
    return { ips: [] };
  }

  /** The next tearDownPod fails with this (once). */
  failNextTearDown: Error | undefined;

  /** While set, tearDownPod hangs until it settles (a plugin that neither answers nor fails). */
  holdTearDown: Promise<void> | undefined;

  override async tearDownPod(target: PodRef): Promise<void> {
    this.calls.push({ step: 'tearDown', sandboxId: target.sandboxId });
    await this.holdTearDown;
    const err = this.failNextTearDown;
    this.failNextTearDown = undefined;
    if (err) throw err;
  }
}

export interface FakeShim {
  readonly shim: ShimContext;
  readonly docker: FakeDocker;
  readonly checkpointStore: FaultyCheckpointStore;
  readonly network: RecordingNetwork;
  /** The temp root directory (checkpoints under sandbox/). */
  readonly rootDir: string;
  /** The checkpoint files on disk (not the cache's memory of them). */
  checkpointFiles(): string[];
  /** Releases what the context holds and removes the root directory. */
  close(): Promise<void>;
}

/** A call context as the gRPC adapter makes one; abort `controller` to cancel the call. */
export function callContext(method: string, controller = new AbortController()): CallContext {
  return { method, signal: controller.signal, deadline: undefined };
}

/** Builds the context; `args` are extra shim flags. The fake Docker has the pause image. */
export async function fakeShimContext(opts: { docker?: FakeDocker; args?: string[]; credentials?: CredentialSource } = {}): Promise<FakeShim> {
  const rootDir = tempDir('fakectx');
  const parsed = parseFlags(['--network-plugin=', `--cri-dockerd-root-directory=${rootDir}`, `--pod-infra-container-image=${FAKE_PAUSE_IMAGE}`, ...(opts.args ?? [])], {});
  if (parsed.kind !== 'run') throw new Error('fake context: the flags asked for help or version');
  const { config } = parsed;
  const docker = opts.docker ?? new FakeDocker();
  if (!docker.images.has(FAKE_PAUSE_IMAGE)) docker.addImage(FAKE_PAUSE_IMAGE);
  const log = silentLogger();
  const cgroups = { driver: 'cgroupfs', version: 1 } as const;
  const checkpointStore = new FaultyCheckpointStore(rootDir, log);
  const checkpoints = new CheckpointCache(checkpointStore);
  await checkpoints.load();
  // No state cache: every query is one list call to the fake Docker.
  const objects = new ShimObjectStore(docker);
  const networkHost = new DockerNetworkHost(docker, objects, checkpoints);
  const network = new RecordingNetwork(networkHost);
  const dockerFacts = new DockerFacts(docker);
  // As start-up does: the facts come from its own version and info answers, not from the calls under test.
  dockerFacts.remember(FAKE_DOCKER_VERSION, docker.daemonInfo);
  const logs = new ContainerLogManager(docker, log, rootDir);
  // Nothing feeds it: these tests do not stream container events.
  const containerEvents: ContainerEventHub = new EventHub({ listen: () => () => undefined }, () => undefined, log);
  const cgroupReader = new CgroupReader({ driver: cgroups.driver, log });
  const storage = new DockerStorage({ docker, objects, log, cgroupReader, stateVersion: () => undefined }, '/var/lib/docker', 'overlay2');
  const stats = new StatsCollector({ docker, cgroupReader, storage });
  const shim: ShimContext = {
    config,
    dockerCached: docker,
    objects,
    // No event stream: nothing but Docker's own flag tells of OOM kills.
    oomKills: { oomKilledIn: () => false },
    dockerFacts,
    dockerLiveness: new DockerLiveness(docker),
    cgroups,
    network: new NetworkManager(network, networkHost, log),
    credentials: opts.credentials ?? { credentialsFor: async () => [] },
    log,
    checkpoints,
    sandboxLocks: new KeyedLock(),
    logs,
    storage,
    stats,
    podMetrics: new PodMetricsCollector({ cgroupReader }, storage),
    sharedReads: new SingleFlight(),
    execOutput: new ExecOutputPool(),
    // No state cache here: every list is built afresh.
    listAnswers: new ListAnswers(() => undefined),
    // Built, never listening: Exec/Attach/PortForward are not what these tests call.
    streaming: new StreamingServer({ bindAddress: config.streamingBindAddr, docker, log }),
    containerEvents,
    // No metrics endpoint: every recorder is its folder's no-op, as in a shim without the flag.
    metrics: undefined,
  };
  return {
    shim,
    docker,
    checkpointStore,
    network,
    rootDir,
    checkpointFiles: () => (fs.existsSync(checkpointStore.directory) ? fs.readdirSync(checkpointStore.directory) : []),
    async close() {
      containerEvents.close('test over');
      await logs.close();
      dockerFacts.close();
      fs.rmSync(rootDir, { recursive: true, force: true });
    },
  };
}
