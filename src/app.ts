// Start-up and shutdown of the whole shim, in order: network plugin choice, Docker reachable
// and new enough, cgroup driver agreed, state directory ready, then the CRI socket.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { detectCgroupSetup, type CgroupSetup } from './cgroups/driver';
import { RuntimeCgroups } from './cgroups/runtime-cgroups';
import type { Config } from './config/flags';
import { criContract, FIRST_CALLS } from './cri/contract';
import type { DockerClient } from './docker/client';
import { EngineApiClient } from './docker/engine-api-client';
import { InstrumentedDockerClient, type DockerCallRecorder } from './docker/instrumented-client';
import { assertSupportedDocker, DockerFacts } from './docker/docker-version';
import { DockerLiveness } from './docker/liveness';
import { DockerSocketPool, dockerSocketCaps, type DockerSocketCaps } from './docker/socket-pool';
import type { DockerInfo, DockerVersion } from './docker/types';
import type { EarlyDockerAnswers } from './docker/early-answers';
import { DockerBadRequestError, errorMessage } from './errors';
import type { RpcRecorder } from './grpc/adapter';
import { CriServer } from './grpc/grpc-server';
import { CheckpointCache } from './checkpoint/checkpoint-cache';
import { CheckpointFiles } from './checkpoint/checkpoint-files';
import { StatsCollector } from './stats/stats-collector';
import { imageStoreOf, type ImageStoreLayout } from './docker/documents';
import { DockerStorage } from './storage/docker-storage';
import { LayerFiguresFile } from './storage/layer-figures-file';
import { PodMetricsCollector } from './pod-metrics/metrics-collector';
import { CgroupReader } from './cgroups/reader';
import { CgroupOomWatch } from './cgroups/oom-watch';
import { heldFilesCap } from './cgroups/kernel-files';
import { ExecOutputPool } from './shim/container/support/capped-output';
import { ListAnswers } from './shim/support/list-answers';
import { HeapTrim } from './util/heap-trim';
import { StreamHeapGrowth } from './util/heap-growth';
import { KeyedLock } from './util/keyed-lock';
import { KernelOomLog, kmsgSource } from './kernel/oom-log';
import { readOpenFilesLimit } from './kernel/open-files-limit';
import type { OomKills } from './docker-cache/container-documents';
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
import { ShimObjectStore } from './object-store/object-store';
import { ContainerSnapshotFile } from './docker-cache/container-snapshot';
import { DEFAULT_RECONNECT_BACKOFF, DockerStateCache, type ContainerState } from './docker-cache/state-cache';
import { containerEventBuilder } from './container-events/builder';
import { EventHub } from './container-events/hub';
import { NO_STREAMING_RECORDER, StreamingServer, type StreamingRecorder } from './streaming/streaming-server';
import { createShimMetrics, type ShimMetrics } from './telemetry/metrics';
import { MetricsServer } from './telemetry/telemetry-server';
import type { Logger } from './util/logger';
import { StartedComponents } from './util/started-components';

class StartupError extends Error {}

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

/**
 * The shim's components, in the order they start; they stop bottom to top (on shutdown, and
 * when start-up fails half-way), with no exceptions: StartedComponents refuses one started out
 * of this order. The functions below build them; a flag may leave a row out.
 */
const COMPONENTS = [
  'Docker connections',
  'state cache',
  'network plugin',
  'Docker facts',
  '--runtime-cgroups re-check',
  'log followers',
  // Closed after the server and the storage passes: nobody reads the held files any more.
  'cgroup reader',
  'storage passes',
  'cgroup OOM watch',
  'heap trim',
  'metrics server',
  'streaming server',
  'CRI server',
  // Built with the context, but started (and closed) with the calls: closed before the CRI
  // server, as open event streams would hold its graceful drain.
  'container event streams',
  // Stopped first: what waits for the sync no longer starts once shutdown began.
  'first sync and what follows it',
] as const;
type Started = StartedComponents<(typeof COMPONENTS)[number]>;

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
      // An answer, not silence: an engine that refuses the request's API version says so with a
      // 400 ("client version 1.40 is too old. Minimum supported API version is 1.44"); waiting
      // changes nothing.
      if (err instanceof DockerBadRequestError) {
        throw new StartupError(`Docker at ${docker.endpoint} refuses the shim's requests: ${errorMessage(err)}`);
      }
      if (Date.now() >= deadline) {
        throw new StartupError(`Docker at ${docker.endpoint} did not answer: ${errorMessage(err)}`);
      }
      if (attempt === 0) log.warn({ endpoint: docker.endpoint, error: errorMessage(err) }, 'waiting for Docker');
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/**
 * `early`: Docker's version and info as main.ts asked for them before the shim loaded.
 * Every component enters `started` as it starts, in COMPONENTS' order; stop() and a start-up
 * that fails half-way stop them in the reverse order (util/started-components.ts).
 */
export async function startShim(config: Config, log: Logger, early?: EarlyDockerAnswers): Promise<RunningShim> {
  // Only with --metrics-bind-addr (prom-client loads then); without it every recorder below is
  // its folder's no-op and the Docker client is not wrapped.
  const metrics = config.metricsBindAddr === '' ? undefined : createShimMetrics();
  const started: Started = new StartedComponents(COMPONENTS);
  try {
    const side = dockerSide(config, log, metrics, started);
    const { version, info } = await dockerAnswers(config, log, side, early, metrics?.docker);
    const services = buildServices(config, log, metrics, side, info, started);
    const sync = firstSync(side.syncState, services.startAfterSync);
    const { context } = services;
    const server = new CriServer(runtimeService(context), imageService(context), log, { ready: sync.ready, open: ANSWERED_BEFORE_SYNC }, services.rpcRecorder);
    // The checkpoints are in memory before the first call (read before, or again if that failed).
    await services.prepared;
    await server.listen(config.containerRuntimeEndpoint);
    started.add('CRI server', server, (s) => s.stop(config.shutdownGraceMs));
    started.add('container event streams', context.containerEvents, (hub) => hub.close('the shim is shutting down'));
    sync.begin();
    started.add('first sync and what follows it', sync, (s) => s.cancel());
    log.info(
      { docker: version.Version, dockerApi: version.ApiVersion, imageStore: services.imageStore?.kind, cgroupDriver: context.cgroups.driver, network: context.network.pluginName, streaming: context.streaming.baseUrl },
      'cri-docker-shim ready',
    );
    return { context, address: server.boundAddress, stop: () => started.stopAll() };
  } catch (err) {
    await started.stopAll().catch(() => undefined);
    throw err instanceof StartupError ? err : new StartupError(errorMessage(err));
  }
}

/** What is built before Docker answers: its clients, the state cache, checkpoints, network, credentials. */
interface DockerSide {
  /**
   * Docker itself (instrumented with metrics): every call reaches the daemon. For what must be
   * Docker's own answer or is a stream: the state cache's reads, the object store's lists when
   * the cache cannot answer, log followers, the streaming server.
   */
  readonly dockerDirect: DockerClient;
  /** The Docker connection budgets, from the descriptor limit. */
  readonly dockerSockets: DockerSocketCaps;
  /** The cgroup files held open at most, from the descriptor limit too. */
  readonly heldKernelFiles: number;
  /**
   * Docker with inspects answered by the state cache and changes followed by it: for everything
   * else (handlers, storage, stats, events, facts, the network host).
   */
  readonly dockerCached: DockerClient;
  /** The shim's sandboxes and containers (and images), found by the typed query: the one way to find objects. */
  readonly objects: ShimObjectStore;
  /** The state cache as its consumers see it (only the caching client and the object store hold the cache itself). */
  readonly state: ContainerState;
  /** Starts the state cache's sync with Docker (see firstSync). */
  syncState(): Promise<void>;
  readonly dockerFacts: DockerFacts;
  readonly checkpoints: CheckpointCache;
  readonly network: NetworkManager;
  readonly credentials: CredentialSource;
}

function dockerSide(config: Config, log: Logger, metrics: ShimMetrics | undefined, started: Started): DockerSide {
  // Node raised the soft limit to the hard one as it started (kernel/open-files-limit.ts).
  const openFiles = readOpenFilesLimit();
  const dockerSockets = dockerSocketCaps(openFiles.soft);
  const heldKernelFiles = heldFilesCap(openFiles.soft);
  log.info({ openFiles: { soft: openFiles.soft, hard: openFiles.hard, known: openFiles.known }, dockerSockets, heldKernelFiles }, 'descriptor limit');
  const engine = started.add(
    'Docker connections',
    new EngineApiClient(config.dockerEndpoint, config.runtimeRequestTimeoutMs, new DockerSocketPool(dockerSockets)),
    (d) => d.close(),
  );
  // Counted under the state cache, so only calls that reach Docker are counted.
  const dockerDirect: DockerClient = metrics ? new InstrumentedDockerClient(engine, metrics.docker) : engine;
  // Handlers read through the state cache; it starts following Docker once Docker answers.
  // A restart starts from the containers the last run held (checked against Docker's list).
  const snapshot = new ContainerSnapshotFile(path.join(config.rootDirectory, 'container-snapshot.json'), log);
  const state = started.add('state cache', new DockerStateCache(dockerDirect, log, DEFAULT_RECONNECT_BACKOFF, metrics?.stateCache, snapshot), (s) => s.stop());
  const dockerCached = new CachingDockerClient(dockerDirect, state);
  const objects = new ShimObjectStore(dockerDirect, state);
  // Checkpoints are read from disk once Docker answers; the network host reads them from memory.
  const checkpoints = new CheckpointCache(new CheckpointFiles(config.rootDirectory, log));
  const networkHost = new DockerNetworkHost(dockerCached, objects, checkpoints);
  const plugin = wrap(() => createNetworkPlugin(config, networkHost, log));
  const network = started.add('network plugin', new NetworkManager(plugin, networkHost, log), (n) => n.close());
  // --pod-cidr: what the node starts with; kubelet's UpdateRuntimeConfig replaces it (as in cri-dockerd).
  if (config.podCidrs.length > 0) network.setPodCidrs(config.podCidrs);
  const credentials = wrap(() => credentialProviders(config, log));
  const dockerFacts = started.add('Docker facts', new DockerFacts(dockerCached), (f) => f.close());
  return { dockerDirect, dockerSockets, heldKernelFiles, dockerCached, objects, state, syncState: () => state.start(), dockerFacts, checkpoints, network, credentials };
}

/**
 * Docker's answers (version ≥ API 1.41, info). While Docker works on them, the services are laid
 * out and the checkpoints read (List reads them from memory). Not before the next turn of the
 * event loop: when start-up asks itself, its requests reach Docker's socket only once it has
 * connected, and both of these keep the thread busy.
 */
async function dockerAnswers(
  config: Config,
  log: Logger,
  { dockerCached, dockerFacts, checkpoints }: DockerSide,
  early: EarlyDockerAnswers | undefined,
  recorder: DockerCallRecorder | undefined,
): Promise<{ version: DockerVersion; info: DockerInfo }> {
  // main.ts asked already; its answers do if they came from this endpoint.
  const askedEarly = early && config.dockerEndpoint.kind === 'unix' && config.dockerEndpoint.path === early.socketPath ? early : undefined;
  const dockerAnswered = waitForDocker(dockerCached, dockerFacts, log, askedEarly, recorder);
  dockerAnswered.catch(() => undefined);
  await new Promise((resolve) => setImmediate(resolve));
  criContract();
  checkpoints.load().catch(() => undefined);
  const answers = await dockerAnswered;
  wrap(() => assertSupportedDocker(answers.version));
  return answers;
}

interface Services {
  readonly context: ShimContext;
  readonly imageStore: ImageStoreLayout | undefined;
  /** Checkpoints in memory, the streaming and metrics servers listening. */
  readonly prepared: Promise<void>;
  /** What starts once the state cache's first sync is done. */
  startAfterSync(): void;
  /** Told of every call: the metrics, and the heap trim. */
  readonly rpcRecorder: RpcRecorder;
}

/** The cgroup setup, the root directory, and the context's services, each built once, in the order they depend on each other. */
function buildServices(config: Config, log: Logger, metrics: ShimMetrics | undefined, side: DockerSide, info: DockerInfo, started: Started): Services {
  const { dockerDirect, dockerCached, objects, state, checkpoints, network } = side;
  const cgroups = wrap(() => detectCgroupSetup(info, config.cgroupDriver));
  if (cgroups.warning) log.warn(cgroups.warning);
  startRuntimeCgroups(config, log, started);
  wrap(() => fs.mkdirSync(config.rootDirectory, { recursive: true, mode: 0o700 }));
  // Log followers read their containers' documents from the state cache, which tells them of each
  // run's end it applies; only whether a container stopped the moment its log stream ends, which
  // can be before the cache has heard of it, is asked of Docker directly.
  const followers = new ContainerLogManager(dockerDirect, log, config.rootDirectory, metrics?.logs, info.DockerRootDir ?? '', dockerCached);
  started.add('log followers', followers, (f) => f.close());
  state.listen({ runEnded: (id) => followers.runEnded(id) });
  const disk = storageAndCgroups(config, log, side, info, cgroups.driver, started);
  const heapTrim = started.add('heap trim', new HeapTrim({ log }), (h) => h.stop());
  // The lists are built from the cache's documents and the checkpoints alone.
  const listAnswers = new ListAnswers(() => {
    const version = state.version;
    return version === undefined ? undefined : version + checkpoints.version;
  });
  // Docker's events (a container came, went, started or stopped): a storage pass, the kept list
  // answers built before it dropped, and work (inspects, the pass) the heap trim looks after.
  state.listen({
    containerChanged: () => {
      disk.storage.containerChanged();
      listAnswers.dropStale();
      heapTrim.activity();
    },
  });
  // What a change leads to later, on timers of its own (a pass, the snapshot's save 60 s after),
  // leaves garbage too: a look follows it, or a burst's last collection would come before it.
  disk.storage.onPassEnded(() => heapTrim.activity());
  // The image store's walk (minutes on a fresh root directory) ends with no pass or call behind it.
  disk.storage.onLayerWalkEnded(() => heapTrim.workEnded());
  state.listen({ snapshotSaved: () => heapTrim.activity() });
  const serving = servers(config, log, metrics, side, heapTrim, started);
  const buildEvent = containerEventBuilder({ dockerCached, oomKills: disk.oomKills, logs: followers, network, log, checkpoints }, state.containers);
  const context: ShimContext = {
    config,
    dockerCached,
    objects,
    oomKills: disk.oomKills,
    dockerFacts: side.dockerFacts,
    dockerLiveness: new DockerLiveness(dockerCached),
    cgroups,
    network,
    credentials: side.credentials,
    log,
    checkpoints,
    sandboxLocks: new KeyedLock(),
    logs: followers,
    storage: disk.storage,
    stats: new StatsCollector({ docker: dockerCached, cgroupReader: disk.cgroupReader, storage: disk.storage }),
    podMetrics: new PodMetricsCollector({ cgroupReader: disk.cgroupReader }, disk.storage),
    sharedReads: new SingleFlight(),
    execOutput: new ExecOutputPool(),
    listAnswers,
    streaming: serving.streaming,
    containerEvents: new EventHub(state, buildEvent, log),
    metrics,
  };
  metrics?.read({ stateCache: state, network });
  const prepared = Promise.all([checkpoints.load(), serving.listen()]);
  prepared.catch(() => undefined);
  // Only calls the gate holds use the log followers (start, status, remove, reopen), so the
  // followers of the previous run resume once the sync is done, before any of those runs,
  // instead of a request per container competing with the sync and the first answers. The
  // network plugin restores what a restart lost (held host ports) then too.
  const startAfterSync = (): void => {
    const resumed = followers.resumeAll();
    if (resumed > 0) log.info({ containers: resumed }, 'resumed container log followers');
    void network.start();
    disk.storage.start();
    // Only v2 counts OOM kills in a file the kernel notifies watchers of.
    if (cgroups.version === 2) disk.cgroupOoms.followRuns(state);
    heapTrim.start();
  };
  return { context, imageStore: disk.imageStore, prepared: prepared.then(() => undefined), startAfterSync, rpcRecorder: serving.rpcRecorder };
}

/** The Docker daemon's processes, not the shim's (as cri-dockerd): never fatal, re-checked on a timer. */
function startRuntimeCgroups(config: Config, log: Logger, started: Started): void {
  if (config.runtimeCgroups === '') return;
  const runtime = RuntimeCgroups.create({
    cgroup: config.runtimeCgroups,
    log,
    root: config.testOnly?.runtimeCgroupsRoot,
    daemonPids: config.testOnly?.dockerDaemonPids,
  });
  started.add('--runtime-cgroups re-check', runtime, (r) => r.stop()).start();
}

/** The containers' cgroup files, the disk Docker's storage takes, and the OOM kills they tell of. */
function storageAndCgroups(config: Config, log: Logger, side: DockerSide, info: DockerInfo, driver: CgroupSetup['driver'], started: Started) {
  const { dockerCached, objects, state } = side;
  // One reader of the containers' cgroup files for all three: a file they all read is opened
  // once, held while the state cache shows its container running, and closed as soon as the
  // cache sees it stop or go.
  const cgroupReader = started.add('cgroup reader', new CgroupReader({ driver, log, runs: state, maxHeldFiles: side.heldKernelFiles }), (r) => r.close());
  // An engine that names no root or driver (none known does) leaves ImageFsInfo UNIMPLEMENTED.
  const imageStore = imageStoreOf(info, (dir) => fs.existsSync(dir));
  const storage = new DockerStorage({ docker: dockerCached, objects, log, cgroupReader, stateVersion: () => state.version }, info.DockerRootDir ?? '', info.Driver ?? '', {
    layout: imageStore,
    layerFigures: new LayerFiguresFile(path.join(config.rootDirectory, 'image-layer-figures.json'), log),
  });
  started.add('storage passes', storage, (s) => s.close());
  // OOM kills as Docker's events told them, else as the container's v2 cgroup counted them in
  // memory.events while it ran, else as the kernel logged them (Docker can miss one).
  const kernelOoms = new KernelOomLog(kmsgSource(log));
  const cgroupOoms = started.add('cgroup OOM watch', new CgroupOomWatch(cgroupReader), (w) => w.close());
  const oomKills: OomKills = {
    oomKilledIn: (id, startedAt) => state.containers.oomKilledIn(id, startedAt) || cgroupOoms.oomKilledIn(id, startedAt) || kernelOoms.killedIn(id),
  };
  return { cgroupReader, imageStore, storage, cgroupOoms, oomKills };
}

/**
 * The streaming server and the metrics endpoint, and what every call and stream tells: the
 * metrics, and the heap trim. `listen()` binds both.
 */
function servers(config: Config, log: Logger, metrics: ShimMetrics | undefined, side: DockerSide, heapTrim: HeapTrim, started: Started) {
  // A call answered or a stream closed is what leaves garbage: the heap trim looks after them, never on an idle shim.
  // ExecSync's answers are garbage only once written out, up to seconds after the handler returned: a look follows that too.
  const rpcRecorder: RpcRecorder = {
    observe: (...call) => {
      metrics?.rpc.observe(...call);
      heapTrim.activity();
    },
    answerWritten: () => heapTrim.activity(),
  };
  const heapGrowth = new StreamHeapGrowth();
  const streamingRecorder: StreamingRecorder = {
    ...(metrics?.streaming ?? NO_STREAMING_RECORDER),
    sessionOpened: (kind) => {
      metrics?.streaming.sessionOpened(kind);
      heapGrowth.opened();
    },
    sessionClosed: (kind) => {
      metrics?.streaming.sessionClosed(kind);
      heapGrowth.closed();
      heapTrim.activity();
    },
  };
  const metricsServer = metrics ? started.add('metrics server', new MetricsServer(metrics, log), (m) => m.close()) : undefined;
  // Docker itself, not the cache: port forward re-inspects the sandbox after opening its
  // network namespace, and that answer must be Docker's own. The node's sessions are capped at
  // the Docker connections kept for them, so one past it is refused at once, never left waiting.
  const streaming = new StreamingServer({
    bindAddress: config.streamingBindAddr,
    docker: side.dockerDirect,
    rootDirectory: config.rootDirectory,
    log,
    recorder: streamingRecorder,
    limits: { sessions: side.dockerSockets.streams },
  });
  started.add('streaming server', streaming, (s) => s.close());
  const listen = async (): Promise<void> => {
    const [, address] = await Promise.all([streaming.listen(), metricsServer?.listen(config.metricsBindAddr)]);
    if (address) log.info({ metrics: `http://${address.host}:${address.port}/metrics` }, 'serving Prometheus metrics');
  };
  return { rpcRecorder, streaming, listen };
}

/**
 * The cache's first sync (a list, and an inspect of every container) begins once the CRI socket
 * is bound: until it is done only Version, Status and RuntimeConfig answer, every other call
 * waits for `ready` (grpc/startup-gate.ts). Binding later would keep kubelet's connection backing
 * off; answering the rest sooner would let a client see container state, or open
 * GetContainerEvents (refused while the cache is unsynced), before the cache has all of it.
 * Beginning it sooner, its replies (an inspect per container) would keep the event loop busy
 * while kubelet's first calls wait for the socket. `then` runs once it is done, unless cancelled.
 */
function firstSync(syncState: () => Promise<void>, then: () => void): { ready: Promise<void>; begin(): void; cancel(): void } {
  let cancelled = false;
  let begin = (): void => undefined;
  const synced = new Promise<void>((resolve) => {
    begin = () => void syncState().then(resolve);
  });
  const ready = synced.then(() => {
    if (!cancelled) then();
  });
  return {
    ready,
    begin: () => begin(),
    cancel: () => {
      cancelled = true;
    },
  };
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
