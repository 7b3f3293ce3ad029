// Docker labels specific to sandboxes, beyond the shared ones in ../labels.ts.
import type { ContainerSummary } from '../../docker/types';
import { fromDockerLabels } from '../labels';

/** The CRI runtime handler a sandbox was started with (absent for the default ''). */
export const RUNTIME_HANDLER_LABEL = 'io.kubernetes.cri-docker-shim.runtime-handler';

/** The CRI labels and annotations of a sandbox, without anything the shim added. */
export function sandboxLabelsFromDocker(docker: Readonly<Record<string, string>> | null | undefined): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  const { labels, annotations } = fromDockerLabels(docker);
  delete labels[RUNTIME_HANDLER_LABEL];
  return { labels, annotations };
}

export function runtimeHandlerFromDocker(docker: Readonly<Record<string, string>> | null | undefined): string {
  return docker?.[RUNTIME_HANDLER_LABEL] ?? '';
}

/** Docker reports a container's names with a leading '/'. */
export function dockerNameOf(c: Pick<ContainerSummary, 'Names'>): string {
  return (c.Names[0] ?? '').replace(/^\//, '');
}
