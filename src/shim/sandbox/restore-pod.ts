// RestorePod (CRI v1.37): not served, as nothing here makes the checkpoints it would restore
// (checkpoint-pod.ts). Docker can only start an existing container from its own experimental
// checkpoint; it cannot create a pod's containers from one in the CREATED state RestorePod asks.
import type { RestorePodResponse } from '../../cri/types';
import { UnimplementedError } from '../../errors';

export async function restorePod(): Promise<RestorePodResponse> {
  throw new UnimplementedError('RestorePod: cri-docker-shim does not restore pods from checkpoints (it makes none: see CheckpointPod)');
}
