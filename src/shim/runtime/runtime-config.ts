// RuntimeConfig: kubelet (1.31+) asks which cgroup driver to use instead of being told by a
// flag, so this must name the driver Docker really uses.
import type { RuntimeConfigRequest__Output, RuntimeConfigResponse } from '../../cri/types';
import type { ShimContext } from '../context';

export async function runtimeConfig(shim: ShimContext, _req: RuntimeConfigRequest__Output): Promise<RuntimeConfigResponse> {
  return { linux: { cgroupDriver: shim.cgroups.driver === 'systemd' ? 'SYSTEMD' : 'CGROUPFS' } };
}
