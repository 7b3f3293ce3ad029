// Which CRI container events one change of a container's Docker state stands for, and which
// pod a container belongs to. Pure.
//
// The cache may fold several Docker events into one re-inspect (a container that is started
// and exits at once is seen only as exited), so the events are read from what changed between
// two inspect documents rather than from Docker's actions: every transition is reported once,
// in order, even when the states in between were never seen.
import type { ContainerEventType__Output } from '../cri/types';
import type { ContainerInspect } from '../docker/types';
import { CONTAINER_TYPE_LABEL, SANDBOX_ID_LABEL, TYPE_CONTAINER, TYPE_SANDBOX } from '../conventions/labels';
import { stateOf } from '../translate/to-cri/container-convert';

export type ContainerEventTypeName = ContainerEventType__Output;

/** Docker's zero time, which inspect reports for "never". */
function isSet(rfc3339: string | undefined): boolean {
  return rfc3339 !== undefined && rfc3339 !== '' && !rfc3339.startsWith('0001-01-01');
}

/** The events between two documents of one container; undefined means "not there". */
export function eventTypesFor(before: ContainerInspect | undefined, after: ContainerInspect | undefined): ContainerEventTypeName[] {
  if (!before && !after) return [];
  if (!after) {
    // Removed (a forced removal may take a running container): it stopped, then went.
    return stateOf(before!.State) === 'CONTAINER_RUNNING' ? ['CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT'] : ['CONTAINER_DELETED_EVENT'];
  }
  const now = stateOf(after.State);
  const events: ContainerEventTypeName[] = [];
  if (!before) {
    events.push('CONTAINER_CREATED_EVENT');
    if (isSet(after.State.StartedAt)) events.push('CONTAINER_STARTED_EVENT');
    if (now === 'CONTAINER_EXITED') events.push('CONTAINER_STOPPED_EVENT');
    return events;
  }
  const was = stateOf(before.State);
  // A new StartedAt is a new run of the process, even if the state looks the same (a restart).
  const newRun = isSet(after.State.StartedAt) && after.State.StartedAt !== before.State.StartedAt;
  if (newRun) {
    if (was === 'CONTAINER_RUNNING') events.push('CONTAINER_STOPPED_EVENT');
    events.push('CONTAINER_STARTED_EVENT');
    if (now === 'CONTAINER_EXITED') events.push('CONTAINER_STOPPED_EVENT');
  } else if (was !== 'CONTAINER_EXITED' && now === 'CONTAINER_EXITED') {
    // Exited, or a start that failed (the container stays "created" with an error).
    events.push('CONTAINER_STOPPED_EVENT');
  }
  return events;
}

/**
 * The pod sandbox a shim container belongs to: its own ID for a pause container, the sandbox
 * label for a container; undefined for anything else.
 */
export function podIdOf(doc: ContainerInspect): string | undefined {
  const labels = doc.Config?.Labels ?? {};
  switch (labels[CONTAINER_TYPE_LABEL]) {
    case TYPE_SANDBOX:
      return doc.Id;
    case TYPE_CONTAINER: {
      const id = labels[SANDBOX_ID_LABEL];
      return id ? id : undefined;
    }
    default:
      return undefined;
  }
}
