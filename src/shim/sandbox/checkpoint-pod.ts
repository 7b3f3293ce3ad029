// CheckpointPod (CRI v1.37): not served, as CheckpointContainer is not. A pod-wide checkpoint
// pauses every chosen container, captures each with CRIU and resumes them; Docker's checkpoints
// are experimental (dockerd --experimental), per container, and need CRIU on the node. The
// answer is UNIMPLEMENTED with that reason, which kubelet reports as the runtime lacking it.
import type { CheckpointPodResponse } from '../../cri/types';
import { UnimplementedError } from '../../errors';

export async function checkpointPod(): Promise<CheckpointPodResponse> {
  throw new UnimplementedError("CheckpointPod: cri-docker-shim does not checkpoint pods (Docker's checkpoints are experimental, per container, and need CRIU)");
}
