// The sandbox (pause) image is pinned: kubelet's image garbage collector must never remove it.
import type { ShimContext } from '../../context';

/** The ID of the configured pod infra image, or undefined when Docker does not have it. */
export async function sandboxImageId(shim: ShimContext, signal: AbortSignal): Promise<string | undefined> {
  try {
    return (await shim.dockerCached.inspectImage(shim.config.podInfraContainerImage, { signal })).Id;
  } catch {
    return undefined;
  }
}
