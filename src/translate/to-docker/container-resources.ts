// A container's resources as Docker's create and update fields (rules in ./linux-resources.ts;
// ../to-cri reads them back for ContainerStatus). Whatever Docker cannot apply is refused rather than ignored.
import type { LinuxContainerResources__Output } from '../../cri/types';
import type { ContainerInspect, ContainerUpdateSpec } from '../../docker/types';
import { UnimplementedError } from '../../errors';
import { checkResources, refuseUnsupported, type DockerResources } from './linux-resources';

/** CRI resources to Docker's create fields; what Docker cannot apply is refused. */
export function toDockerResources(field: string, r: LinuxContainerResources__Output | null): DockerResources & { OomScoreAdj?: number } {
  if (!r) return {};
  const checked = checkResources(field, r);
  refuseUnsupported(field, r, checked);
  return checked.oomScoreAdj !== 0 ? { ...checked.docker, OomScoreAdj: checked.oomScoreAdj } : checked.docker;
}

/**
 * The update Docker can apply to a running container. oom_score_adj cannot be changed after
 * start: a request that keeps it as it is passes, one that changes it is refused.
 */
export function toDockerUpdate(field: string, r: LinuxContainerResources__Output, current: ContainerInspect): ContainerUpdateSpec {
  const checked = checkResources(field, r);
  refuseUnsupported(field, r, checked);
  const currentOom = current.HostConfig.OomScoreAdj ?? 0;
  if (checked.oomScoreAdj !== currentOom) {
    throw new UnimplementedError(`${field}.oom_score_adj: Docker cannot change it on an existing container (it is ${currentOom})`);
  }
  return checked.docker;
}

