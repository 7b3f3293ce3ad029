// CreateContainer: translate the request, check the pod and the image exist, create the
// Docker container. Docker's create is one call, so a failure leaves nothing behind; a call
// abandoned mid-way (cancelled, timed out) removes what Docker may have made under its name.
import type { CallContext, CreateContainerRequest__Output, CreateContainerResponse } from '../../cri/types';
import type { DockerClient } from '../../docker/client';
import { CancelledError, DockerNotFoundError, DockerTimeoutError, NotFoundError } from '../../errors';
import type { ShimContext } from '../context';
import { identifyShimObject } from '../support/resolve';
import { buildCreatePlan } from '../../translate/to-docker/container-create-spec';
import { nodeHostView } from '../../translate/to-docker/node-host-view';
import { quote } from '../../util/quote';

export async function createContainer(
  shim: ShimContext,
  req: CreateContainerRequest__Output,
  ctx: CallContext,
): Promise<CreateContainerResponse> {
  const opts = { signal: ctx.signal };
  const sandbox = await identifyShimObject(shim, 'sandbox', 'pod_sandbox_id', req.podSandboxId, opts);
  const { spec } = buildCreatePlan({
    sandboxId: sandbox.id,
    config: req.config,
    sandboxConfig: req.sandboxConfig,
    cgroupDriver: shim.cgroups.driver,
    host: nodeHostView,
    engine: await shim.dockerFacts.features(opts),
  });
  await requireLocalImage(shim.dockerCached, spec.Image!, opts);
  try {
    return { containerId: await shim.dockerCached.createContainer(spec, opts) };
  } catch (err) {
    if (err instanceof CancelledError || err instanceof DockerTimeoutError) await removeByName(shim, spec.name!);
    throw err;
  }
}

async function requireLocalImage(docker: DockerClient, image: string, opts: { signal: AbortSignal }): Promise<void> {
  try {
    await docker.inspectImage(image, opts);
  } catch (err) {
    if (err instanceof DockerNotFoundError) {
      throw new NotFoundError(`config.image.image: image ${quote(image)} is not present; pull it first`);
    }
    throw err;
  }
}

async function removeByName(shim: ShimContext, name: string): Promise<void> {
  try {
    await shim.dockerCached.removeContainer(name, { force: true, removeVolumes: true });
  } catch (err) {
    if (!(err instanceof DockerNotFoundError)) shim.log.warn({ name, error: (err as Error).message }, 'could not remove an abandoned container');
  }
}
