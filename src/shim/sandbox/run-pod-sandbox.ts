// RunPodSandbox: check the request, make sure the pause image is here, create the pause
// container (clearing a stale one of the same name), record its checkpoint, start it, and
// wire up its network. If any step after create fails, the container and checkpoint are
// removed before the error is returned.
import type { SandboxCheckpoint } from '../../checkpoint/checkpoint';
import { CHECKPOINT_VERSION } from '../../checkpoint/checkpoint';
import type { CallContext, RunPodSandboxRequest__Output, RunPodSandboxResponse } from '../../cri/types';
import type { ContainerCreateSpec } from '../../docker/types';
import { AlreadyExistsError, DockerConflictError, errorMessage } from '../../errors';
import type { PodRef } from '../../network/network-host';
import { rfc3339ToNanos } from '../../util/time';
import type { ShimContext } from '../context';
import { sandboxCreateSpec } from '../../translate/to-docker/sandbox-create-spec';
import { ensureImage } from './support/ensure-image';
import { planSandbox, type SandboxPlan } from '../../translate/to-docker/sandbox-plan';
import { killContainerIfPresent, removeContainerIfPresent } from './support/pod-containers';
import { dockerRuntimeFor } from './support/runtime-handler';

export async function runPodSandbox(shim: ShimContext, req: RunPodSandboxRequest__Output, ctx: CallContext): Promise<RunPodSandboxResponse> {
  const opts = { signal: ctx.signal };
  const plan = planSandbox(req);
  const dockerRuntime = await dockerRuntimeFor(shim.dockerFacts, plan.runtimeHandler, opts);
  await ensureImage(shim, shim.config.podInfraContainerImage, ctx);
  const spec = sandboxCreateSpec(plan, {
    image: shim.config.podInfraContainerImage,
    cgroupDriver: shim.cgroups.driver,
    dockerRuntime,
    networkMode: shim.network.dockerNetworkMode(plan),
  });

  const { sandboxLocks: locks } = shim;
  // One RunPodSandbox per name at a time, from create through start: a second call for the
  // same pod must find the first's container running, not mistake it (still only created)
  // for a stale leftover and remove it.
  const id = await locks.run(`name:${spec.name!}`, async () => {
    const created = await createSandboxContainer(shim, spec, opts);
    await locks.run(created, () => startSandbox(shim, plan, created, ctx));
    return created;
  });
  shim.log.info({ sandboxId: id, pod: `${plan.metadata.namespace}/${plan.metadata.name}` }, 'pod sandbox running');
  return { podSandboxId: id };
}

/** Creates the pause container; a stopped sandbox of the same name (a failed earlier attempt) is removed first. */
async function createSandboxContainer(shim: ShimContext, spec: ContainerCreateSpec, opts: { signal: AbortSignal }): Promise<string> {
  try {
    return await shim.dockerCached.createContainer(spec, opts);
  } catch (err) {
    if (!(err instanceof DockerConflictError)) throw err;
  }
  const name = spec.name!;
  // Only a sandbox of the shim's own is cleared. The store holds nothing else: when none of
  // its objects has the name (a container the shim did not make holds it, or it went
  // meanwhile), the create is tried again and Docker's refusal, naming the holder, stands.
  const [existing] = await shim.objects.list({ kind: 'any', name }, opts);
  if (existing) {
    const isSandbox = existing.kind === 'sandbox';
    if (!isSandbox || existing.status === 'running') {
      throw new AlreadyExistsError(
        `pod sandbox name ${name} is already in use by ${isSandbox ? 'running sandbox' : 'container'} ${existing.id}; stop and remove it first`,
      );
    }
    shim.log.info({ name, stale: existing.id, state: existing.status }, 'removing a stale sandbox container of the same name');
    await removeContainerIfPresent(shim.dockerCached, existing.id);
    await shim.checkpoints.remove(existing.id);
  }
  return shim.dockerCached.createContainer(spec, opts);
}

async function startSandbox(shim: ShimContext, plan: SandboxPlan, id: string, ctx: CallContext): Promise<void> {
  const opts = { signal: ctx.signal };
  const { checkpoints } = shim;
  const target: PodRef = {
    podName: plan.metadata.name,
    podNamespace: plan.metadata.namespace,
    podUid: plan.metadata.uid,
    sandboxId: id,
    annotations: plan.annotations,
  };
  let networkSetUp = false;
  try {
    const inspect = await shim.dockerCached.inspectContainer(id, opts);
    await checkpoints.write(checkpointOf(plan, id, rfc3339ToNanos(inspect.Created)));
    await shim.dockerCached.startContainer(id, opts);
    networkSetUp = true;
    await shim.network.setUpPod(target, plan, plan.dns, ctx.signal);
  } catch (err) {
    // Roll back without the caller's signal: a cancelled call must still clean up.
    if (networkSetUp) {
      try {
        await shim.network.tearDownPod(target, plan);
      } catch (teardownErr) {
        // Removing the pod now would lose what a later DEL needs (its checkpoint and CNI cache):
        // the pod stays, NOTREADY with its pause stopped, and kubelet's garbage collection
        // stops and removes it, whose teardown runs DEL again (as containerd leaves it).
        logRollback(shim, id, 'network teardown (the pod is left NOTREADY for a later StopPodSandbox)', teardownErr);
        await killContainerIfPresent(shim.dockerCached, id).catch((e: unknown) => logRollback(shim, id, 'stop container', e));
        throw err;
      }
    }
    await removeContainerIfPresent(shim.dockerCached, id).catch((e: unknown) => logRollback(shim, id, 'remove container', e));
    await checkpoints.remove(id).catch((e: unknown) => logRollback(shim, id, 'remove checkpoint', e));
    throw err;
  }
}

function checkpointOf(plan: SandboxPlan, id: string, createdAt: string): SandboxCheckpoint {
  return {
    version: CHECKPOINT_VERSION,
    id,
    name: plan.metadata.name,
    namespace: plan.metadata.namespace,
    uid: plan.metadata.uid,
    attempt: plan.metadata.attempt,
    createdAt,
    runtimeHandler: plan.runtimeHandler,
    hostNetwork: plan.hostNetwork,
    portMappings: plan.portMappings,
    labels: plan.labels,
    annotations: plan.annotations,
  };
}

function logRollback(shim: ShimContext, id: string, step: string, err: unknown): void {
  shim.log.error({ sandboxId: id, step, error: errorMessage(err) }, 'rollback of a failed RunPodSandbox step failed');
}
