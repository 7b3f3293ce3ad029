// Turns one change the state cache applied into GetContainerEvents messages: the events it
// stands for (transitions.ts), each with the pod's sandbox status and the status of every
// container of the pod, built by the same converters PodSandboxStatus and ContainerStatus use.
// Which documents make up the pod is read synchronously, at the moment of the change; only the
// extras (image identity, pod IPs, process user) are fetched afterwards.
import type { CheckpointCache } from '../checkpoint/checkpoint-cache';
import type { ContainerEventResponse } from '../cri/types';
import type { ContainerInspect } from '../docker/types';
import { isFullId } from '../conventions/ids';
import { CONTAINER_TYPE_LABEL, SANDBOX_ID_LABEL, TYPE_CONTAINER } from '../conventions/labels';
import type { ContainerChange } from '../docker-cache/container-documents';
import { assembleContainerStatus, assembleSandboxStatus, type StatusSources } from '../status/assemble-status';
import { rfc3339ToNanos } from '../util/time';
import type { EventBuilder, EventHub } from './hub';
import { eventTypesFor, podIdOf, type ContainerEventTypeName } from './transitions';

/** The documents the cache holds, as the builder reads them. */
interface HeldContainers {
  get(id: string): ContainerInspect | undefined;
  values(): IterableIterator<ContainerInspect>;
}

/** One change, with the pod as it stood right after it. */
interface PodSnapshot {
  containerId: string;
  types: ContainerEventTypeName[];
  podId: string;
  /** The pause container's document; its last one when the change removed it. */
  sandbox: ContainerInspect | undefined;
  sandboxRemoved: boolean;
  /** The pod's containers still held, oldest first. */
  containers: ContainerInspect[];
}


function compareNanos(a: string, b: string): number {
  const d = BigInt(a) - BigInt(b);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/** IDs are hex: code-unit order is theirs. Not localeCompare: its ICU collator costs ~3 MiB of RSS once used. */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** What a change means for kubelet, read from the held documents; undefined if nothing. Pure. */
export function snapshotOf(change: ContainerChange, held: HeldContainers): PodSnapshot | undefined {
  const types = eventTypesFor(change.before, change.after);
  if (types.length === 0) return undefined;
  const doc = (change.after ?? change.before)!;
  const podId = podIdOf(doc);
  if (podId === undefined) return undefined;
  const ownSandbox = podId === change.id;
  const sandbox = ownSandbox ? doc : held.get(podId);
  const containers: ContainerInspect[] = [];
  for (const c of held.values()) {
    const labels = c.Config?.Labels ?? {};
    if (labels[CONTAINER_TYPE_LABEL] === TYPE_CONTAINER && labels[SANDBOX_ID_LABEL] === podId) containers.push(c);
  }
  containers.sort((a, b) => compareNanos(rfc3339ToNanos(a.Created), rfc3339ToNanos(b.Created)) || compareIds(a.Id, b.Id));
  return { containerId: change.id, types, podId, sandbox, sandboxRemoved: ownSandbox && !change.after, containers };
}

/** Nanosecond times that never repeat or go back, so kubelet's cache orders every event. */
export class EventClock {
  private last = 0n;

  now(): string {
    let t = BigInt(Date.now()) * 1_000_000n;
    if (t <= this.last) t = this.last + 1n;
    this.last = t;
    return t.toString();
  }
}

/** What the builder reads besides the cache's documents: status sources and the checkpoints. */
interface EventSources extends StatusSources {
  readonly checkpoints: Pick<CheckpointCache, 'read'>;
}

/** The hub GetContainerEvents listens to. */
export type ContainerEventHub = EventHub<ContainerChange, ContainerEventResponse>;

/** The builder the hub runs for each change (see hub.ts). */
export function containerEventBuilder(
  sources: EventSources,
  held: HeldContainers,
  clock = new EventClock(),
): EventBuilder<ContainerChange, ContainerEventResponse> {
  return (change) => {
    const snap = snapshotOf(change, held);
    return snap ? () => messagesFor(sources, snap, clock) : undefined;
  };
}

async function messagesFor(sources: EventSources, snap: PodSnapshot, clock: EventClock): Promise<ContainerEventResponse[]> {
  // The ID may come from a label someone else set: only a well-formed one is looked up.
  const checkpoint = isFullId(snap.podId) ? await sources.checkpoints.read(snap.podId) : undefined;
  // Statuses as PodSandboxStatus and ContainerStatus answer them (which, for a stopped
  // container, wait until its log file is complete).
  const [podSandboxStatus, containersStatuses] = await Promise.all([
    assembleSandboxStatus(sources, snap.sandbox, checkpoint, snap.sandboxRemoved),
    Promise.all(snap.containers.map((c) => assembleContainerStatus(sources, c))),
  ]);
  return snap.types.map((type) => {
    const message: ContainerEventResponse = {
      containerId: snap.containerId,
      containerEventType: type,
      createdAt: clock.now(),
      containersStatuses,
    };
    if (podSandboxStatus) message.podSandboxStatus = podSandboxStatus;
    return message;
  });
}
