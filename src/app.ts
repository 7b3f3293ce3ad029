// Start-up and shutdown of the whole shim, in order: network plugin choice, Docker reachable
// and new enough, cgroup driver agreed, state directory ready, then the CRI socket.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { detectCgroupSetup } from './cgroups/driver';
import { moveSelfToCgroup } from './cgroups/self';
import type { Config } from './config/flags';
import { criContract, FIRST_CALLS } from './cri/contract';
import type { DockerClient } from './docker/client';
import { DockerodeClient } from './docker/dockerode-client';
import { InstrumentedDockerClient, type DockerCallRecorder } from './docker/instrumented-client';
import { assertSupportedDocker, DockerFacts } from './docker/docker-version';
import { DockerLiveness } from './docker/liveness';
import { DockerSocketPool, dockerSocketCaps } from './docker/socket-pool';
import type { DockerInfo, DockerVersion } from './docker/types';
import type { EarlyDockerAnswers } from './docker/early-answers';
import { errorMessage } from './errors';
import { CriServer } from './grpc/grpc-server';
import { CheckpointCache } from './checkpoint/checkpoint-cache';
import { CheckpointStore } from './checkpoint/store';
import { StatsCollector } from './stats/stats-collector';
import { imageStoreOf } from './docker/documents';
import { DockerStorage } from './storage/docker-storage';
import { LayerFiguresFile } from './storage/layer-figures-file';
import { PodMetricsCollector } from './pod-metrics/metrics-collector';
import { CgroupReader } from './cgroups/reader';
import { CgroupOomWatch } from './cgroups/oom-watch';
import { ListAnswers } from './shim/list-answers';
import { HeapTrim } from './util/heap-trim';
import { KeyedLock } from './util/keyed-lock';
import { KernelOomLog, kmsgSource } from './kernel/oom-log';
import { readOpenFilesLimit } from './kernel/open-files-limit';
import type { OomKills } from './docker-cache/container-store';
import { SingleFlight } from './util/single-flight';
import { ChainedCredentials, DockerConfigCredentials } from './credentials/docker-config';
import { CredentialProviders, type CredentialSource } from './credentials/providers';
import { ContainerLogManager } from './logs/log-manager';
import { DockerNetworkHost } from './network/docker-host';
import { createNetworkPlugin } from './network/factory';
import { NetworkManager } from './network/network-manager';
import type { ShimContext } from './shim/context';
import { imageService } from './shim/image-service';
import { runtimeService } from './shim/runtime-service';
import { CachingDockerClient } from './docker-cache/caching-client';
import { ContainerSnapshotFile } from './docker-cache/container-snapshot';
import { DEFAULT_RECONNECT_BACKOFF, DockerStateCache } from './docker-cache/state-cache';
import { containerEventBuilder } from './container-events/builder';
import { EventHub } from './container-events/hub';
import { StreamingServer } from './streaming/streaming-server';
import { createShimMetrics } from './telemetry/metrics';
import { MetricsServer } from './telemetry/telemetry-server';
import type { Logger } from './util/logger';

export class StartupError extends Error {}

export interface RunningShim {
  readonly context: ShimContext;
  readonly address: string;
  stop(): Promise<void>;
}

/**
 * The calls answered while the state cache's first sync runs: none reads or changes containers.
 * The contract makes their message types apart from the rest, so they answer sooner.
 */
const ANSWERED_BEFORE_SYNC: ReadonlySet<string> = new Set(FIRST_CALLS);

/** How long start-up waits for a Docker daemon that is not answering yet (it may be booting too). */
const DOCKER_STARTUP_WAIT_MS = 10_000;

/**
 * Waits for Docker's version, then gives its info too. Info is asked for alongside each
 * version attempt (start-up needs both; in parallel they cost one round trip), but only a
 * version failure means "not answering yet": an info failure once the version came is asked
 * again once and then fails start-up, as when the two were asked one after the other.
 * The version is asked through DockerFacts, so the first Version RPC finds it cached instead
 * of queueing behind the resync and the log followers' requests at a busy daemon. `early`:
 * the answers main.ts asked for before the shim loaded (then nothing is asked unless they failed).
 */
async function waitForDocker(
  docker: DockerClient,
  facts: DockerFacts,
  log: Logger,
  early: Pick<EarlyDockerAnswers, 'version' | 'info'> | undefined,
  recorder: DockerCallRecorder | undefined,
): Promise<{ version: DockerVersion; info: DockerInfo }> {
  if (early) {
    try {
      const [version, info] = await Promise.all([early.version, early.info]);
      // Counted as the client would have counted them (metrics).
      recorder?.observe('version', version.seconds, undefined);
      recorder?.observe('info', info.seconds, undefined);
      facts.remember(version.document as DockerVersion, info.document as DockerInfo);
      return { version: version.document as DockerVersion, info: info.document as DockerInfo };
    } catch {
      // Asked again below, with the usual deadline, retries and messages.
    }
  }
  const deadline = Date.now() + DOCKER_STARTUP_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    const info = docker.info();
    info.catch(() => undefined);
    try {
      const version = await facts.version();
      return { version, info: await info.catch(() => docker.info()) };
    } catch (err) {
      if (Date.now() >= deadline) {
        throw new StartupError(`Docker at ${docker.endpoint} did not answer: ${errorMessage(err)}`);
      }
      if (attempt === 0) log.warn({ endpoint: docker.endpoint, error: errorMessage(err) }, 'waiting for Docker');
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** `early`: Docker's version and info as main.ts asked for them before the shim loaded. */
export async function startShim(config: Config, log: Logger, early?: EarlyDockerAnswers): Promise<RunningShim> {
  // Only with --metrics-bind-addr (prom-client loads then); without it every recorder below is
  // its folder's no-op and the Docker client is not wrapped.
  const metrics = config.metricsBindAddr === '' ? undefined : createShimMetrics();
  // Node raised the soft limit to the hard one as it started (kernel/open-files-limit.ts).
  const openFiles = readOpenFilesLimit();
  const dockerSockets = dockerSocketCaps(openFiles.soft);
  log.info({ openFiles: { soft: openFiles.soft, hard: openFiles.hard, known: openFiles.known }, dockerSockets }, 'descriptor limit');
  const dockerode = new DockerodeClient(config.dockerEndpoint, config.runtimeRequestTimeoutMs, new DockerSocketPool(dockerSockets));
  // Counted under the state cache, so only calls that reach Docker are counted.
  const rawDocker: DockerClient = metrics ? new InstrumentedDockerClient(dockerode, metrics.docker) : dockerode;
  // Handlers read through the state cache; it starts following Docker once Docker answers.
  // A restart starts from the containers the last run held (checked against Docker's list).
  const snapshot = new ContainerSnapshotFile(path.join(config.rootDirectory, 'container-snapshot.json'), log);
  const state = new DockerStateCache(rawDocker, log, DEFAULT_RECONNECT_BACKOFF, metrics?.stateCache, snapshot);
  const docker = new CachingDockerClient(rawDocker, state);
  // Checkpoints are read from disk once Docker answers; the network host reads them from memory.
  const checkpoints = new CheckpointCache(new CheckpointStore(config.rootDirectory, log));
  const networkHost = new DockerNetworkHost(docker, checkpoints);
  const network = new NetworkManager(wrap(() => createNetworkPlugin(config, networkHost, log)), networkHost, log);
  // --pod-cidr: what the node starts with; kubelet's UpdateRuntimeConfig replaces it (as in cri-dockerd).
  if (config.podCidrs.length > 0) network.setPodCidrs(config.podCidrs);
  const credentials = wrap(() => credentialProviders(config, log));
  const dockerFacts = new DockerFacts(docker);

  // main.ts asked already; its answers do if they came from this endpoint.
  const askedEarly = early && config.dockerEndpoint.kind === 'unix' && config.dockerEndpoint.path === early.socketPath ? early : undefined;
  const dockerAnswered = waitForDocker(docker, dockerFacts, log, askedEarly, metrics?.docker);
  dockerAnswered.catch(() => undefined);
  // While Docker works on its answer, the services are laid out and the checkpoints read (List
  // reads them from memory). Not before the next turn of the event loop: when start-up asks
  // itself, its requests reach Docker's socket only once it has connected, and both of these
  // keep the thread busy.
  await new Promise((resolve) => setImmediate(resolve));
  criContract();
  checkpoints.load().catch(() => undefined);
  const { version, info } = await dockerAnswered;
  wrap(() => assertSupportedDocker(version));
  // The cache's first sync (a list, and an inspect of every container) runs after the socket
  // is bound: until it is done only Version,
  // Status and RuntimeConfig answer, every other call waits for it (grpc/startup-gate.ts).
  // Binding later would keep kubelet's connection backing off; answering the rest sooner would
  // let a client see container state, or open GetContainerEvents (refused while the cache is
  // unsynced), before the cache has all of it.
  // It starts once the socket is bound: its replies (an inspect per container) would otherwise
  // keep the event loop busy while kubelet's first calls wait for the socket.
  let beginSync = (): void => undefined;
  const synced = new Promise<void>((resolve) => {
    beginSync = () => void state.start().then(resolve);
  });
  let stopping = false;
  let logs: ContainerLogManager | undefined;
  let streaming: StreamingServer | undefined;
  const metricsServer = metrics ? new MetricsServer(metrics, log) : undefined;
  try {
    const cgroups = wrap(() => detectCgroupSetup(info, config.cgroupDriver));
    if (cgroups.warning) log.warn(cgroups.warning);
    if (config.runtimeCgroups !== '') {
      const moved = wrap(() => moveSelfToCgroup(config.runtimeCgroups, cgroups.version));
      log.info({ cgroups: moved }, 'moved into --runtime-cgroups');
    }
    wrap(() => fs.mkdirSync(config.rootDirectory, { recursive: true, mode: 0o700 }));

    // Process state, each piece built once, in the order they depend on each other.
    // Log followers ask whether a container stopped the moment its log stream ends, which can be
    // before the cache has heard of it: they go to Docker directly.
    const followers = new ContainerLogManager(rawDocker, log, config.rootDirectory, metrics?.logs, info.DockerRootDir ?? '');
    logs = followers;
    // An engine that names no root or driver (none known does) leaves ImageFsInfo UNIMPLEMENTED.
    // One reader of the containers' cgroup files for all three: a file they all read is opened
    // once, held while the state cache shows its container running, and closed as soon as the
    // cache sees it stop or go.
    const cgroupReader = new CgroupReader({ driver: cgroups.driver, log, runs: state });
    const imageStore = imageStoreOf(info, (dir) => fs.existsSync(dir));
    const storage = new DockerStorage({ docker, log, cgroupReader, stateVersion: () => state.version }, info.DockerRootDir ?? '', info.Driver ?? '', {
      layout: imageStore,
      layerFigures: new LayerFiguresFile(path.join(config.rootDirectory, 'image-layer-figures.json'), log),
    });
    const stats = new StatsCollector({ docker, cgroupReader, storage });
    const podMetrics = new PodMetricsCollector({ cgroupReader }, storage);
    // Docker itself, not the cache: port forward re-inspects the sandbox after opening its
    // network namespace, and that answer must be Docker's own.
    const streamingServer = new StreamingServer({ bindAddress: config.streamingBindAddr, docker: rawDocker, log, recorder: metrics?.streaming });
    streaming = streamingServer;
    // OOM kills as Docker's events told them, else as the container's v2 cgroup counted them in
    // memory.events while it ran, else as the kernel logged them (Docker can miss one).
    const kernelOoms = new KernelOomLog(kmsgSource(log));
    const cgroupOoms = new CgroupOomWatch(cgroupReader);
    const oomKills: OomKills = {
      oomKilledIn: (id, startedAt) => state.containers.oomKilledIn(id, startedAt) || cgroupOoms.oomKilledIn(id, startedAt) || kernelOoms.killedIn(id),
    };
    const buildEvent = containerEventBuilder({ docker, oomKills, logs: followers, network, log, checkpoints }, state.containers);
    const containerEvents = new EventHub(state, buildEvent, log);
    const heapTrim = new HeapTrim({ log });
    const context: ShimContext = {
      config,
      docker,
      oomKills,
      dockerFacts,
      dockerLiveness: new DockerLiveness(docker),
      cgroups,
      network,
      credentials,
      log,
      checkpoints,
      sandboxLocks: new KeyedLock(),
      logs: followers,
      storage,
      stats,
      podMetrics,
      sharedReads: new SingleFlight(),
      // The lists are built from the cache's documents and the checkpoints alone.
      listAnswers: new ListAnswers(() => {
        const version = state.version;
        return version === undefined ? undefined : version + checkpoints.version;
      }),
      streaming: streamingServer,
      containerEvents,
      metrics,
    };
    metrics?.read({ stateCache: state, network });
    // The checkpoints are in memory before the first call (read above, or again if that failed).
    const prepared = Promise.all([checkpoints.load(), streamingServer.listen(), metricsServer?.listen(config.metricsBindAddr)]);
    prepared.catch(() => undefined);
    // Only calls the gate holds use the log followers (start, status, remove, reopen), so the
    // followers of the previous run resume once the sync is done, before any of those runs,
    // instead of a request per container competing with the sync and the first answers. The
    // network plugin restores what a restart lost (held host ports) then too.
    const ready = synced.then(() => {
      if (stopping) return;
      const resumed = followers.resumeAll();
      if (resumed > 0) log.info({ containers: resumed }, 'resumed container log followers');
      void network.start();
      storage.start();
      // Only v2 counts OOM kills in a file the kernel notifies watchers of.
      if (cgroups.version === 2) cgroupOoms.followRuns(state);
      heapTrim.start();
    });
    const server = new CriServer(runtimeService(context), imageService(context), log, { ready, open: ANSWERED_BEFORE_SYNC }, metrics?.rpc);
    const [, , metricsAddress] = await prepared;
    if (metricsAddress) log.info({ metrics: `http://${metricsAddress.host}:${metricsAddress.port}/metrics` }, 'serving Prometheus metrics');
    await server.listen(config.containerRuntimeEndpoint);
    beginSync();
    log.info(
      { docker: version.Version, dockerApi: version.ApiVersion, imageStore: imageStore?.kind, cgroupDriver: cgroups.driver, network: network.pluginName, streaming: streamingServer.baseUrl },
      'cri-docker-shim ready',
    );
    return {
      context,
      address: server.boundAddress,
      async stop() {
        stopping = true;
        containerEvents.close('the shim is shutting down');
        await server.stop(config.shutdownGraceMs);
        await streamingServer.close();
        await metricsServer?.close();
        await state.stop();
        await followers.close();
        await network.close();
        dockerFacts.close();
        storage.close();
        heapTrim.stop();
        cgroupOoms.close();
        // After the server and the storage passes: nobody reads the held files any more.
        cgroupReader.close();
        dockerode.close();
      },
    };
  } catch (err) {
    stopping = true;
    await streaming?.close();
    await metricsServer?.close();
    await state.stop();
    dockerFacts.close();
    await logs?.close();
    await network.close();
    dockerode.close();
    throw err instanceof StartupError ? err : new StartupError(errorMessage(err));
  }
}

/**
 * Where pulls without request auth find credentials: the plugins --image-credential-provider-config
 * names (checked now, so a bad config stops start-up), then config.json in the root directory.
 */
function credentialProviders(config: Config, log: Logger): CredentialSource {
  const dockerConfig = new DockerConfigCredentials(path.join(config.rootDirectory, 'config.json'), log);
  if (config.imageCredentialProviderConfig === '') return dockerConfig;
  // Loaded only with the flag: its YAML parser is ~70 modules every other start would load.
  const { loadCredentialProviderConfig } = require('./credentials/provider-config') as typeof import('./credentials/provider-config');
  const plugins = loadCredentialProviderConfig(config.imageCredentialProviderConfig, config.imageCredentialProviderBinDir);
  log.info({ providers: plugins.map((p) => p.name) }, 'credential provider plugins configured');
  return new ChainedCredentials([new CredentialProviders(plugins, log), dockerConfig]);
}

/** Runs a start-up step, turning whatever it throws into a StartupError with its message. */
function wrap<T>(step: () => T): T {
  try {
    return step();
  } catch (err) {
    throw err instanceof StartupError ? err : new StartupError(errorMessage(err));
  }
}
