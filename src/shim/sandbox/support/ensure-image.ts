// "Make sure the sandbox image is present": inspect, and pull when Docker does not have it,
// with the same credential sources (provider plugins, config.json) a PullImage without auth uses.
// When the image is the shim's default and cannot be pulled (no registry can be reached), it is
// made here from the shim's own pause program instead (src/pause); an image the user named is
// never replaced.
import type { CallContext } from '../../../cri/types';
import { DEFAULT_POD_INFRA_IMAGE } from '../../../config/flags';
import { DockerNotFoundError, errorMessage } from '../../../errors';
import { importLocalPauseImage, localPauseProgram } from '../../../pause/local-image';
import type { ShimContext } from '../../context';
import { pullWithCredentials } from '../../image/pull-image';
import { parseImageReference, type ImageReference } from '../../../conventions/image-reference';

async function isPresent(shim: ShimContext, image: string, ctx: CallContext): Promise<boolean> {
  try {
    await shim.dockerCached.inspectImage(image, { signal: ctx.signal });
    return true;
  } catch (err) {
    if (err instanceof DockerNotFoundError) return false;
    throw err;
  }
}

export async function ensureImage(shim: ShimContext, image: string, ctx: CallContext): Promise<void> {
  if (await isPresent(shim, image, ctx)) return;
  const ref = parseImageReference(image, '--pod-infra-container-image');
  shim.log.info({ image }, 'pulling the sandbox image');
  try {
    await pullWithCredentials(shim, ref, null, ctx);
  } catch (err) {
    if (ctx.signal.aborted || ref.pullRef !== parseImageReference(DEFAULT_POD_INFRA_IMAGE, 'default').pullRef) throw err;
    await makeDefaultPauseImage(shim, ref, err, ctx);
  }
}

/** Imports the default pause image from the shim's own program; `pullError` if there is none. */
async function makeDefaultPauseImage(shim: ShimContext, ref: ImageReference, pullError: unknown, ctx: CallContext): Promise<void> {
  const program = localPauseProgram();
  if (!program) {
    shim.log.warn({ image: ref.pullRef }, 'the default pause image cannot be pulled, and this build has no pause program to make it from (install gcc and libc6-dev, then npm run build)');
    throw pullError;
  }
  // One import at a time: pods started together would each import it, leaving untagged copies.
  await shim.sandboxLocks.run(`pause-image:${ref.pullRef}`, async () => {
    if (await isPresent(shim, ref.pullRef, ctx)) return;
    shim.log.warn({ image: ref.pullRef, program: program.where, pullError: errorMessage(pullError) }, 'the default pause image cannot be pulled; making it from the shim\'s own pause program');
    await importLocalPauseImage(shim.dockerCached, ref.pullRef, program, { signal: ctx.signal });
  });
}
