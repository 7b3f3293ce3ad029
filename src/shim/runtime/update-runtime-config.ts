// UpdateRuntimeConfig: kubelet passes the node's pod CIDR once it knows it. An empty request
// (or an empty CIDR) changes nothing.
import type { UpdateRuntimeConfigRequest__Output, UpdateRuntimeConfigResponse } from '../../cri/types';
import { InvalidArgumentError } from '../../errors';
import type { ShimContext } from '../context';
import { splitCidrList } from '../../util/net';
import { quote } from '../../util/quote';

export async function updateRuntimeConfig(
  shim: ShimContext,
  req: UpdateRuntimeConfigRequest__Output,
): Promise<UpdateRuntimeConfigResponse> {
  const cidr = req.runtimeConfig?.networkConfig?.podCidr ?? '';
  const { cidrs, invalid } = splitCidrList(cidr);
  if (invalid !== undefined) throw new InvalidArgumentError(`runtime_config.network_config.pod_cidr: ${quote(invalid)} is not a CIDR`);
  if (cidrs.length === 0) return {};
  shim.network.setPodCidrs(cidrs);
  shim.log.info({ podCidr: cidr }, 'pod CIDR updated');
  return {};
}
