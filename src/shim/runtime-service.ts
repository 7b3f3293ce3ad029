// The RuntimeService as the shim serves it: each RPC name mapped to the module that implements
// it. An RPC missing from this table answers UNIMPLEMENTED (see ../grpc/adapter.ts).
import type { RuntimeServiceImpl } from '../cri/types';
import { getContainerEvents } from './container/get-container-events';
import { containerStatus } from './container/container-status';
import { createContainer } from './container/create-container';
import { execSync } from './container/exec-sync';
import { listContainers } from './container/list-containers';
import { streamContainers } from './container/stream-containers';
import { removeContainer } from './container/remove-container';
import { reopenContainerLog } from './container/reopen-container-log';
import { startContainer } from './container/start-container';
import { stopContainer } from './container/stop-container';
import { updateContainerResources } from './container/update-container-resources';
import type { ShimContext } from './context';
import { runtimeConfig } from './runtime/runtime-config';
import { listPodSandbox } from './sandbox/list-pod-sandbox';
import { streamPodSandboxes } from './sandbox/stream-pod-sandboxes';
import { podSandboxStatus } from './sandbox/pod-sandbox-status';
import { removePodSandbox } from './sandbox/remove-pod-sandbox';
import { runPodSandbox } from './sandbox/run-pod-sandbox';
import { checkpointPod } from './sandbox/checkpoint-pod';
import { restorePod } from './sandbox/restore-pod';
import { stopPodSandbox } from './sandbox/stop-pod-sandbox';
import { updatePodSandboxResources } from './sandbox/update-pod-sandbox-resources';
import { status } from './runtime/status';
import { updateRuntimeConfig } from './runtime/update-runtime-config';
import { version } from './runtime/version';
import { containerStats } from './stats/container-stats';
import { listContainerStats } from './stats/list-container-stats';
import { streamContainerStats } from './stats/stream-container-stats';
import { listPodSandboxStats } from './stats/list-pod-sandbox-stats';
import { podSandboxStats } from './stats/pod-sandbox-stats';
import { streamPodSandboxStats } from './stats/stream-pod-sandbox-stats';
import { listMetricDescriptors } from './stats/list-metric-descriptors';
import { listPodSandboxMetrics } from './stats/list-pod-sandbox-metrics';
import { streamPodSandboxMetrics } from './stats/stream-pod-sandbox-metrics';
import { attach } from './streaming/attach';
import { exec } from './streaming/exec';
import { portForward } from './streaming/port-forward';

export function runtimeService(shim: ShimContext): RuntimeServiceImpl {
  return {
    Version: (req) => version(shim, req),
    Status: (req, ctx) => status(shim, req, ctx),
    RuntimeConfig: (req) => runtimeConfig(shim, req),
    UpdateRuntimeConfig: (req) => updateRuntimeConfig(shim, req),
    // Pod sandboxes
    RunPodSandbox: (req, ctx) => runPodSandbox(shim, req, ctx),
    StopPodSandbox: (req, ctx) => stopPodSandbox(shim, req, ctx),
    RemovePodSandbox: (req, ctx) => removePodSandbox(shim, req, ctx),
    PodSandboxStatus: (req, ctx) => podSandboxStatus(shim, req, ctx),
    ListPodSandbox: (req, ctx) => listPodSandbox(shim, req, ctx),
    StreamPodSandboxes: (req, send, ctx) => streamPodSandboxes(shim, req, send, ctx),
    UpdatePodSandboxResources: (req, ctx) => updatePodSandboxResources(shim, req, ctx),
    // Not served, each with its reason (CheckpointContainer, not listed, is refused by ../grpc/adapter.ts)
    CheckpointPod: () => checkpointPod(),
    RestorePod: () => restorePod(),
    // Containers
    CreateContainer: (req, ctx) => createContainer(shim, req, ctx),
    StartContainer: (req, ctx) => startContainer(shim, req, ctx),
    StopContainer: (req, ctx) => stopContainer(shim, req, ctx),
    RemoveContainer: (req, ctx) => removeContainer(shim, req, ctx),
    ContainerStatus: (req, ctx) => containerStatus(shim, req, ctx),
    ListContainers: (req, ctx) => listContainers(shim, req, ctx),
    StreamContainers: (req, send, ctx) => streamContainers(shim, req, send, ctx),
    UpdateContainerResources: (req, ctx) => updateContainerResources(shim, req, ctx),
    ExecSync: (req, ctx) => execSync(shim, req, ctx),
    ReopenContainerLog: (req, ctx) => reopenContainerLog(shim, req, ctx),
    GetContainerEvents: (req, send, ctx) => getContainerEvents(shim, req, send, ctx),
    // Stats (src/stats): read from cgroup files, not Docker's stats endpoint
    ContainerStats: (req, ctx) => containerStats(shim, req, ctx),
    ListContainerStats: (req, ctx) => listContainerStats(shim, req, ctx),
    StreamContainerStats: (req, send, ctx) => streamContainerStats(shim, req, send, ctx),
    PodSandboxStats: (req, ctx) => podSandboxStats(shim, req, ctx),
    ListPodSandboxStats: (req, ctx) => listPodSandboxStats(shim, req, ctx),
    StreamPodSandboxStats: (req, send, ctx) => streamPodSandboxStats(shim, req, send, ctx),
    // Metrics (src/pod-metrics): cAdvisor's series for kubelet's /metrics/cadvisor
    ListMetricDescriptors: () => listMetricDescriptors(),
    ListPodSandboxMetrics: (_req, ctx) => listPodSandboxMetrics(shim, ctx),
    StreamPodSandboxMetrics: (_req, send, ctx) => streamPodSandboxMetrics(shim, send, ctx),
    // Streaming: each answers a URL on the streaming server
    Exec: (req, ctx) => exec(shim, req, ctx),
    Attach: (req, ctx) => attach(shim, req, ctx),
    PortForward: (req, ctx) => portForward(shim, req, ctx),
  };
}
