// The RuntimeService as the shim serves it: each RPC name mapped to the module that implements
// it. An RPC missing from this table answers UNIMPLEMENTED (see ../grpc/adapter.ts).
import type { RuntimeServiceImpl } from '../cri/types';
import type { ShimContext } from './context';
import { runtimeConfig } from './runtime-config';
import { listPodSandbox, streamPodSandboxes } from './sandbox/list-pod-sandbox';
import { podSandboxStatus } from './sandbox/pod-sandbox-status';
import { removePodSandbox } from './sandbox/remove-pod-sandbox';
import { runPodSandbox } from './sandbox/run-pod-sandbox';
import { stopPodSandbox } from './sandbox/stop-pod-sandbox';
import { updatePodSandboxResources } from './sandbox/update-pod-sandbox-resources';
import { status } from './status';
import { updateRuntimeConfig } from './update-runtime-config';
import { version } from './version';

export function runtimeService(shim: ShimContext): RuntimeServiceImpl {
  return {
    Version: (req) => version(shim, req),
    Status: (req) => status(shim, req),
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
  };
}
