// PodSandboxStatus: the pause container as Docker sees it now, with the pod's IPs from the
// network plugin (assembled by ../../status/assemble-status.ts, as GetContainerEvents does); a sandbox whose container is gone but whose checkpoint remains is reported
// NOTREADY from the checkpoint. `verbose` adds an "info" JSON document.
import type { CallContext, PodSandboxStatusRequest__Output, PodSandboxStatusResponse } from '../../cri/types';
import type { ContainerInspect } from '../../docker/types';
import { DockerNotFoundError, NotFoundError } from '../../errors';
import { nowNanos } from '../../util/time';
import type { ShimContext } from '../context';
import { assembleSandboxStatus } from '../../status/assemble-status';
import { statusFromCheckpoint } from '../../translate/to-cri/sandbox-convert';
import { findSandbox, type FoundSandbox } from './support/lookup';
import { quote } from '../../util/quote';

export async function podSandboxStatus(
  shim: ShimContext,
  req: PodSandboxStatusRequest__Output,
  ctx: CallContext,
): Promise<PodSandboxStatusResponse> {
  const opts = { signal: ctx.signal };
  const found = await findSandbox(shim, 'pod_sandbox_id', req.podSandboxId, opts);
  if (!found) throw new NotFoundError(`pod sandbox ${quote(req.podSandboxId)} not found`);
  const inspect = found.container ? await inspectIfPresent(shim, found.id, opts) : undefined;
  if (!inspect) {
    if (!found.checkpoint) throw new NotFoundError(`pod sandbox ${quote(req.podSandboxId)} not found`);
    const response: PodSandboxStatusResponse = { status: statusFromCheckpoint(found.checkpoint), timestamp: nowNanos() };
    if (req.verbose) response.info = { info: JSON.stringify({ checkpoint: found.checkpoint, container: null }) };
    return response;
  }
  const response: PodSandboxStatusResponse = {
    status: await assembleSandboxStatus(shim, inspect, found.checkpoint),
    timestamp: nowNanos(),
  };
  if (req.verbose) response.info = { info: JSON.stringify(verboseInfo(shim, found, inspect)) };
  return response;
}

async function inspectIfPresent(shim: ShimContext, id: string, opts: { signal: AbortSignal }): Promise<ContainerInspect | undefined> {
  try {
    return await shim.dockerCached.inspectContainer(id, opts);
  } catch (err) {
    if (err instanceof DockerNotFoundError) return undefined;
    throw err;
  }
}

function verboseInfo(shim: ShimContext, found: FoundSandbox, c: ContainerInspect): Record<string, unknown> {
  const h = c.HostConfig;
  return {
    pid: c.State.Pid,
    image: c.Config.Image,
    dockerState: c.State.Status,
    startedAt: c.State.StartedAt,
    finishedAt: c.State.FinishedAt,
    exitCode: c.State.ExitCode,
    networkPlugin: shim.network.pluginName,
    runtime: h.Runtime,
    cgroupParent: h.CgroupParent,
    networkMode: h.NetworkMode,
    pidMode: h.PidMode,
    ipcMode: h.IpcMode,
    resolvConfPath: c.ResolvConfPath,
    hostnamePath: c.HostnamePath,
    portMappings: found.checkpoint?.portMappings ?? [],
    checkpoint: found.checkpoint !== undefined,
  };
}
