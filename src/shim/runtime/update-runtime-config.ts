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
  for (const part of cidr.split(',')) {
    if (!isCidr(part.trim())) {
      throw new InvalidArgumentError(`runtime_config.network_config.pod_cidr: ${quote(part)} is not a CIDR`);
    }
  }
  shim.network.setPodCidr(cidr);
  shim.log.info({ podCidr: cidr }, 'pod CIDR updated');
  return {};
}
