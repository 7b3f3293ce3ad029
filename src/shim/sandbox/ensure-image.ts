// "Make sure the sandbox image is present": inspect, and pull when Docker does not have it.
// One function on purpose: the image service will swap in its credential-aware pull here.
import type { CallOptions, DockerClient } from '../../docker/client';
import { DockerNotFoundError } from '../../errors';
import type { Logger } from '../../util/logger';

export async function ensureImage(
  docker: Pick<DockerClient, 'inspectImage' | 'pullImage'>,
  ref: string,
  log: Logger,
  opts?: CallOptions,
): Promise<void> {
  try {
    await docker.inspectImage(ref, opts);
    return;
  } catch (err) {
    if (!(err instanceof DockerNotFoundError)) throw err;
  }
  log.info({ image: ref }, 'pulling the sandbox image');
  await docker.pullImage(ref, undefined, () => {}, opts);
}
