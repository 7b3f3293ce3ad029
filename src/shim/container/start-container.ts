// StartContainer: create the container's CRI log file, start the Docker container, and start
// the log follower that fills the file.
import type { CallContext, StartContainerRequest__Output, StartContainerResponse } from '../../cri/types';
import { openContainerLog } from '../../logs/log-file';
import type { ShimContext } from '../context';
import { containerLogPath, logPathNeedsImage } from '../../conventions/labels';
import { imageIdentity } from '../../status/assemble-status';
import { inspectShimContainer } from '../support/resolve';
import { killContainerIfPresent } from '../sandbox/support/pod-containers';
import { errorMessage } from '../../errors';

export async function startContainer(shim: ShimContext, req: StartContainerRequest__Output, ctx: CallContext): Promise<StartContainerResponse> {
  const opts = { signal: ctx.signal };
  const inspect = await inspectShimContainer(shim, req.containerId, opts);
  const { Id } = inspect;
  // Only a container from before the shim recorded its labels needs its image's to tell its own log path.
  const imageLabels = logPathNeedsImage(inspect.Config.Labels, inspect.Name) ? (await imageIdentity(shim.dockerCached, inspect, opts)).labels : undefined;
  const logPath = containerLogPath(inspect.Config.Labels, inspect.Name, imageLabels);
  // As containerd does, the log file is made before the container starts: kubelet and log
  // readers find it as soon as this returns, even if the container never prints, and a log
  // path that cannot be written fails the start instead of running a container unlogged.
  const file = logPath === '' ? undefined : await openContainerLog(logPath);
  try {
    await shim.dockerCached.startContainer(Id, opts);
  } catch (err) {
    await file?.close();
    throw err;
  }
  // Docker keeps the output from the first byte, so following after the start loses nothing.
  if (file) {
    try {
      await shim.logs.follow(Id, logPath, inspect.Config.Tty === true, file);
    } catch (err) {
      // Its follower could not be set up (the root directory's disk is full): rather than a
      // container running unlogged, the start fails, as for a log file that cannot be opened.
      await killContainerIfPresent(shim.dockerCached, Id).catch((e: unknown) => {
        shim.log.error({ containerId: Id, error: errorMessage(e) }, 'stopping a container whose log follower failed to start failed');
      });
      throw err;
    }
  }
  return {};
}
