// "Make sure the sandbox image is present": inspect, and pull when Docker does not have it,
// with the same credential sources (provider plugins, config.json) a PullImage without auth uses.
import type { CallContext } from '../../cri/types';
import { DockerNotFoundError } from '../../errors';
import type { ShimContext } from '../context';
import { pullWithCredentials } from '../image/pull-image';
import { parseImageReference } from '../image/reference';

export async function ensureImage(shim: ShimContext, image: string, ctx: CallContext): Promise<void> {
  try {
    await shim.docker.inspectImage(image, { signal: ctx.signal });
    return;
  } catch (err) {
    if (!(err instanceof DockerNotFoundError)) throw err;
  }
  shim.log.info({ image }, 'pulling the sandbox image');
  await pullWithCredentials(shim, parseImageReference(image, '--pod-infra-container-image'), null, ctx);
}
