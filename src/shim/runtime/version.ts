// Version: who we are. kubelet checks runtime_api_version is "v1" before using any other RPC.
import type { VersionRequest__Output, VersionResponse } from '../../cri/types';
import type { ShimContext } from '../context';

const RUNTIME_NAME = 'docker';
const CRI_API_VERSION = 'v1';
/** The VersionResponse.version field: the version of the kubelet runtime API we speak. */
const KUBELET_RUNTIME_API_VERSION = '0.1.0';

export async function version(shim: ShimContext, _req: VersionRequest__Output): Promise<VersionResponse> {
  const docker = await shim.dockerFacts.version();
  return {
    version: KUBELET_RUNTIME_API_VERSION,
    runtimeName: RUNTIME_NAME,
    runtimeVersion: docker.Version,
    runtimeApiVersion: CRI_API_VERSION,
  };
}
