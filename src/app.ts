// Start-up and shutdown of the whole shim, in order: network plugin choice, Docker reachable
// and new enough, cgroup driver agreed, state directory ready, then the CRI socket.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { detectCgroupSetup } from './cgroups/driver';
import { moveSelfToCgroup } from './cgroups/self';
import type { Config } from './config/flags';
import { DockerodeClient, type DockerClient } from './docker/client';
import { assertSupportedDocker, DockerFacts } from './docker/version';
import type { DockerVersion } from './docker/types';
import { errorMessage } from './errors';
import { CriServer } from './grpc/server';
import { CheckpointCache } from './checkpoint/cache';
import { CheckpointStore } from './checkpoint/store';
import { StatsCollector } from './stats/collector';
import { KeyedLock } from './util/keyed-lock';
import { loadCredentialProviderConfig } from './credentials/config';
import { ChainedCredentials, DockerConfigCredentials } from './credentials/docker-config';
import { CredentialProviders, type CredentialSource } from './credentials/providers';
import { ContainerLogManager } from './logs/manager';
import { DockerNetworkHost } from './network/docker-host';
import { createNetworkPlugin } from './network/factory';
import { NetworkManager } from './network/manager';
import type { ShimContext } from './shim/context';
import { imageService } from './shim/image-service';
import { runtimeService } from './shim/runtime-service';
import { CachingDockerClient } from './docker-cache/caching-client';
import { DockerStateCache } from './docker-cache/state-cache';
import { containerEventBuilder } from './container-events/builder';
import { EventHub } from './container-events/hub';
import { StreamingServer } from './streaming/server';
import type { Logger } from './util/logger';

export class StartupError extends Error {}

export interface RunningShim {
  readonly context: ShimContext;
  readonly address: string;
  stop(): Promise<void>;
}

/** How long start-up waits for a Docker daemon that is not answering yet (it may be booting too). */
const DOCKER_STARTUP_WAIT_MS = 10_000;

async function waitForDocker(docker: DockerClient, log: Logger): Promise<DockerVersion> {
  const deadline = Date.now() + DOCKER_STARTUP_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      return await docker.version();
    } catch (err) {
      if (Date.now() >= deadline) {
        throw new StartupError(`Docker at ${docker.endpoint} did not answer: ${errorMessage(err)}`);
      }
      if (attempt === 0) log.warn({ endpoint: docker.endpoint, error: errorMessage(err) }, 'waiting for Docker');
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export async function startShim(config: Config, log: Logger): Promise<RunningShim> {
  const rawDocker = new DockerodeClient(config.dockerEndpoint, config.runtimeRequestTimeoutMs);
  // Handlers read through the state cache; it starts following Docker once Docker answers.
  const state = new DockerStateCache(rawDocker, log);
  const docker = new CachingDockerClient(rawDocker, state);
  // Checkpoints are read from disk once Docker answers; the network host reads them from memory.
  const checkpoints = new CheckpointCache(new CheckpointStore(config.rootDirectory, log));
  const networkHost = new DockerNetworkHost(docker, checkpoints);
  const network = new NetworkManager(wrap(() => createNetworkPlugin(config, networkHost, log)), networkHost, log);
  const credentials = wrap(() => credentialProviders(config, log));

  const version = await waitForDocker(docker, log);
  wrap(() => assertSupportedDocker(version));
  const info = await docker.info();
  const cgroups = wrap(() => detectCgroupSetup(info, config.cgroupDriver));
  if (cgroups.warning) log.warn(cgroups.warning);
  if (config.runtimeCgroups !== '') {
    const moved = wrap(() => moveSelfToCgroup(config.runtimeCgroups, cgroups.version));
    log.info({ cgroups: moved }, 'moved into --runtime-cgroups');
  }
  wrap(() => fs.mkdirSync(config.rootDirectory, { recursive: true, mode: 0o700 }));

  // Process state, each piece built once, in the order they depend on each other.
  const dockerFacts = new DockerFacts(docker);
  // Log followers ask whether a container stopped the moment its log stream ends, which can be
  // before the cache has heard of it: they go to Docker directly.
  const logs = new ContainerLogManager(rawDocker, log, config.rootDirectory);
  const resumed = logs.resumeAll();
  if (resumed > 0) log.info({ containers: resumed }, 'resumed container log followers');
  const stats = new StatsCollector({ docker, cgroups, log });
  const streaming = new StreamingServer({ bindAddress: config.streamingBindAddr, docker, log });
  const buildEvent = containerEventBuilder({ docker, logs, network, log, checkpoints }, state.containers);
  const containerEvents = new EventHub(state, buildEvent, log);
  const context: ShimContext = {
    config,
    docker,
    dockerFacts,
    cgroups,
    network,
    credentials,
    log,
    checkpoints,
    sandboxLocks: new KeyedLock(),
    logs,
    stats,
    streaming,
    containerEvents,
  };
  const server = new CriServer(runtimeService(context), imageService(context), log);
  try {
    await checkpoints.load();
    await state.start();
    await streaming.listen();
    await server.listen(config.containerRuntimeEndpoint);
    void network.start();
  } catch (err) {
    await streaming.close();
    await state.stop();
    dockerFacts.close();
    await logs.close();
    await network.close();
    throw new StartupError(errorMessage(err));
  }
  log.info(
    { docker: version.Version, dockerApi: version.ApiVersion, cgroupDriver: cgroups.driver, network: network.pluginName, streaming: streaming.baseUrl },
    'cri-docker-shim ready',
  );
  return {
    context,
    address: server.boundAddress,
    async stop() {
      containerEvents.close('the shim is shutting down');
      await server.stop(config.shutdownGraceMs);
      await streaming.close();
      await state.stop();
      await logs.close();
      await network.close();
      dockerFacts.close();
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
