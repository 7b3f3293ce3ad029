// Docker labels specific to sandboxes, beyond the shared ones in ../labels.ts.
import type { ContainerSummary } from '../../docker/types';
import { RUNTIME_HANDLER_LABEL } from '../labels';

export function runtimeHandlerFromDocker(docker: Readonly<Record<string, string>> | null | undefined): string {
  return docker?.[RUNTIME_HANDLER_LABEL] ?? '';
}

/** Docker reports a container's names with a leading '/'. */
export function dockerNameOf(c: Pick<ContainerSummary, 'Names'>): string {
  return (c.Names[0] ?? '').replace(/^\//, '');
}
