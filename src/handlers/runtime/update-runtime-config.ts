// UpdateRuntimeConfig: kubelet passes the node's pod CIDR once it knows it. An empty request
// (or an empty CIDR) changes nothing.
import type { UpdateRuntimeConfigRequest__Output, UpdateRuntimeConfigResponse } from '../../cri/types';
import { InvalidArgumentError } from '../../errors';
import type { ShimContext } from '../context';
import { isCidr } from '../../util/net';
import { quote } from '../../util/quote';

export async function updateRuntimeConfig(
  shim: ShimContext,
  req: UpdateRuntimeConfigRequest__Output,
): Promise<UpdateRuntimeConfigResponse> {
  const cidr = req.runtimeConfig?.networkConfig?.podCidr ?? '';
  if (cidr === '') return {};
  const cidrs = cidr.split(',').map((part) => part.trim());
  for (const part of cidrs) {
    if (!isCidr(part)) {
      throw new InvalidArgumentError(`runtime_config.network_config.pod_cidr: ${quote(part)} is not a CIDR`);
    }
  }
  shim.network.setPodCidrs(cidrs);
  shim.log.info({ podCidr: cidr }, 'pod CIDR updated');
  return {};
}
