// Status: is Docker answering, and is pod networking ready. kubelet polls this every few
// seconds and stops creating pods while either condition is false, so a Docker outage must
// show here (and clear by itself when Docker is back) rather than fail the call.
import type { CallContext, RuntimeCondition, RuntimeHandler, StatusRequest__Output, StatusResponse } from '../../cri/types';
import { errorMessage } from '../../errors';
import { NETWORK_NOT_READY } from '../../network/network-plugin';
import type { ShimContext } from '../context';
import { SHIM_VERSION } from '../context';

const RUNTIME_READY = 'RuntimeReady';
const NETWORK_READY = 'NetworkReady';
const DOCKER_NOT_READY_REASON = 'DockerDaemonNotReady';

export async function status(shim: ShimContext, req: StatusRequest__Output, ctx: CallContext): Promise<StatusResponse> {
  const runtime = await runtimeCondition(shim, ctx.signal);
  const net = await shim.network.status(ctx.signal);
  const network: RuntimeCondition = net.ready
    ? { type: NETWORK_READY, status: true }
    : {
        type: NETWORK_READY,
        status: false,
        reason: net.reason ?? NETWORK_NOT_READY,
        message: net.message ?? `network plugin ${shim.network.pluginName} is not ready`,
      };
  const response: StatusResponse = {
    status: { conditions: [runtime, network] },
    runtimeHandlers: await runtimeHandlers(shim, runtime.status === true, ctx.signal),
    // mount_options means noexec, nodev and nosuid on binds (CRI v1.37), which Docker cannot
    // apply: false, so kubelet sends none (../../translate/to-docker/container-mounts.ts).
    features: { supplementalGroupsPolicy: false, userNamespacesHostNetwork: false, mountOptions: false },
  };
  if (req.verbose) response.info = await verboseInfo(shim, runtime.status === true, ctx.signal);
  return response;
}

/** From `shim.dockerLiveness`: within a second, even while Docker hangs. */
async function runtimeCondition(shim: ShimContext, signal: AbortSignal): Promise<RuntimeCondition> {
  const live = await shim.dockerLiveness.check(signal);
  if (live.ready) return { type: RUNTIME_READY, status: true };
  // The daemon may come back upgraded: look its version up again then.
  shim.dockerFacts.invalidate();
  return { type: RUNTIME_READY, status: false, reason: DOCKER_NOT_READY_REASON, message: live.message };
}

/**
 * The handlers a pod may ask for: Docker's default ('') and each runtime Docker is configured
 * with, all with the same features. Docker cannot give a pod its own user namespace;
 * recursive read-only mounts are what this engine can make (API 1.44 and Linux 5.12).
 */
async function runtimeHandlers(shim: ShimContext, dockerReady: boolean, signal: AbortSignal): Promise<RuntimeHandler[]> {
  const features = { recursiveReadOnlyMounts: false, userNamespaces: false };
  let names: string[] = [];
  // Docker down or hung: RuntimeReady already says so; the default handler is all we can name
  // without waiting on it.
  if (dockerReady) {
    try {
      names = await shim.dockerFacts.runtimes({ signal });
      features.recursiveReadOnlyMounts = (await shim.dockerFacts.features({ signal })).recursiveReadOnlyMounts;
    } catch {
      // Gone meanwhile: as above.
    }
  }
  return ['', ...names].map((name) => ({ name, features }));
}

async function verboseInfo(shim: ShimContext, dockerReady: boolean, signal: AbortSignal): Promise<Record<string, string>> {
  const info: Record<string, string> = {
    shim: JSON.stringify({ version: SHIM_VERSION }),
    cgroup: JSON.stringify(shim.cgroups),
    network: JSON.stringify({ plugin: shim.network.pluginName, podCidr: shim.network.podCidrs.join(','), ...(await shim.network.status(signal)) }),
    config: JSON.stringify(publicConfig(shim)),
  };
  try {
    info.docker = JSON.stringify(dockerReady ? await shim.dockerFacts.version({ signal }) : { error: 'not answering' });
  } catch (err) {
    info.docker = JSON.stringify({ error: errorMessage(err) });
  }
  return info;
}

function publicConfig(shim: ShimContext): Record<string, unknown> {
  const c = shim.config;
  return {
    containerRuntimeEndpoint: c.containerRuntimeEndpoint.url,
    dockerEndpoint: c.dockerEndpoint.url,
    podInfraContainerImage: c.podInfraContainerImage,
    cgroupDriver: shim.cgroups.driver,
    networkPlugin: c.networkPlugin,
    streamingBindAddr: c.streamingBindAddr,
    rootDirectory: c.rootDirectory,
    imagePullProgressDeadlineMs: c.imagePullProgressDeadlineMs,
    runtimeRequestTimeoutMs: c.runtimeRequestTimeoutMs,
  };
}
