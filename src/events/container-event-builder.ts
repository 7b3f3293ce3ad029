// Turns one change the state cache applied into GetContainerEvents messages: the events it
// stands for (transitions.ts), each with the pod's sandbox status and the status of every
// container of the pod, built by the same converters PodSandboxStatus and ContainerStatus use.
// Which documents make up the pod is read synchronously, at the moment of the change; only the
// extras (image identity, pod IPs, process user) are fetched afterwards.
import type { ContainerEventResponse, ContainerStatus, PodSandboxStatus } from '../cri/types';
import type { ContainerInspect } from '../docker/types';
import { imageIdentity, LOG_DRAIN_WAIT_MS, processUser } from '../shim/container/container-status';
import { containerStatusFromInspect } from '../shim/container/status-convert';
import type { ShimContext } from '../shim/context';
import { CONTAINER_TYPE_LABEL, SANDBOX_ID_LABEL, TYPE_CONTAINER } from '../shim/labels';
import { statusFromCheckpoint, statusFromInspect } from '../shim/sandbox/convert';
import { networkTarget } from '../shim/sandbox/lookup';
import { sandboxState } from '../shim/sandbox/state';
import type { ContainerChange } from '../state/container-store';
import { summaryFromInspect } from '../state/summary';
import { rfc3339ToNanos } from '../util/time';
import { eventTypesFor, podIdOf, type ContainerEventTypeName } from './transitions';

/** The documents the cache holds, as the builder reads them. */
export interface HeldContainers {
  get(id: string): ContainerInspect | undefined;
  values(): IterableIterator<ContainerInspect>;
}

/** One change, with the pod as it stood right after it. */
export interface PodSnapshot {
  containerId: string;
  types: ContainerEventTypeName[];
  podId: string;
  /** The pause container's document; its last one when the change removed it. */
  sandbox: ContainerInspect | undefined;
  sandboxRemoved: boolean;
  /** The pod's containers still held, oldest first. */
  containers: ContainerInspect[];
}

const FULL_ID = /^[0-9a-f]{64}$/;

function compareNanos(a: string, b: string): number {
  const d = BigInt(a) - BigInt(b);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
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
  containers.sort((a, b) => compareNanos(rfc3339ToNanos(a.Created), rfc3339ToNanos(b.Created)) || a.Id.localeCompare(b.Id));
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

/** The builder the hub runs for each change (see hub.ts). */
export function containerEventBuilder(
  shim: ShimContext,
  held: HeldContainers,
  clock = new EventClock(),
): (change: ContainerChange) => (() => Promise<ContainerEventResponse[]>) | undefined {
  return (change) => {
    const snap = snapshotOf(change, held);
    return snap ? () => messagesFor(shim, snap, clock) : undefined;
  };
}

async function messagesFor(shim: ShimContext, snap: PodSnapshot, clock: EventClock): Promise<ContainerEventResponse[]> {
  const own = snap.containers.find((c) => c.Id === snap.containerId);
  // As with ContainerStatus: EXITED means the container's log file is complete.
  if (own && !own.State.Running) await shim.logs.drained(own.Id, LOG_DRAIN_WAIT_MS);
  const [podSandboxStatus, containersStatuses] = await Promise.all([sandboxStatus(shim, snap), Promise.all(snap.containers.map((c) => containerStatusOf(shim, c)))]);
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

async function containerStatusOf(shim: ShimContext, c: ContainerInspect): Promise<ContainerStatus> {
  return containerStatusFromInspect(c, await imageIdentity(shim.docker, c, {}), processUser(c));
}

/** As PodSandboxStatus answers it; from the checkpoint once the pause container is gone. */
async function sandboxStatus(shim: ShimContext, snap: PodSnapshot): Promise<PodSandboxStatus | undefined> {
  // The ID may come from a label someone else set: only a well-formed one is looked up.
  const checkpoint = FULL_ID.test(snap.podId) ? await sandboxState(shim).checkpoints.read(snap.podId) : undefined;
  const doc = snap.sandbox;
  if (!doc) return checkpoint ? statusFromCheckpoint(checkpoint) : undefined;
  if (snap.sandboxRemoved) return { ...statusFromInspect(doc, checkpoint, []), state: 'SANDBOX_NOTREADY' };
  const running = doc.State.Running;
  const hostNetwork = doc.HostConfig.NetworkMode === 'host';
  const found = { id: doc.Id, container: summaryFromInspect(doc, doc.Image, Date.now()), checkpoint };
  const ips = running && !hostNetwork ? (await shim.network.podIps(networkTarget(found))).ips : [];
  return statusFromInspect(doc, checkpoint, ips);
}
