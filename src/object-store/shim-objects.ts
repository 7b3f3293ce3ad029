// The shim's own Docker containers (pods' pause containers and pods' containers) as the CRI
// lists see them, and the one typed query over them: kind (or any kind), ID prefix, pod
// sandbox ID prefix, Docker name, CRI label selector, CRI state. Pure: ./object-store.ts answers the query
// from the state cache's inspect documents, or from the one Docker list call `dockerListOf`
// makes, through the same matcher.
import type { ContainerInspect, ContainerSummary, DockerFilters } from '../docker/types';
import type { ContainerState__Output, PodSandboxState__Output } from '../cri/types';
import { isFullId } from '../conventions/ids';
import { CONTAINER_TYPE_LABEL, fromDockerLabels, matchesLabelSelector, SANDBOX_ID_LABEL, shimLabels, TYPE_CONTAINER, TYPE_SANDBOX } from '../conventions/labels';
import { bareDockerName } from '../conventions/naming';

export type ObjectKind = 'sandbox' | 'container';

/** CRI's state of an object: a container's ContainerState, a sandbox's PodSandboxState. */
type ObjectState = ContainerState__Output | PodSandboxState__Output;

/** Which of the shim's objects a caller wants: every part given must hold. */
export interface ObjectQuery {
  /** 'any': sandboxes and containers alike. */
  kind: ObjectKind | 'any';
  /** The object's ID or a prefix of it ('' or absent: any). */
  id?: string;
  /** A container's pod sandbox ID or a prefix of it ('' or absent: any). */
  sandboxId?: string;
  /** Docker's name, whole, without the leading '/' ('' or absent: any). */
  name?: string;
  /** CRI's label selector: every key=value among the object's CRI labels. */
  labels?: Readonly<Record<string, string>> | null;
  /** CRI's state. */
  state?: ObjectState;
}

/**
 * One of the shim's Docker containers, from the cache's inspect document or Docker's list
 * entry; the same either way but for `inspect`. Shared by every caller that gets it (the cache
 * makes one per document): read it, never change it.
 */
export interface ShimObject {
  readonly kind: ObjectKind;
  readonly id: string;
  /** Docker's name, without the leading '/'. */
  readonly name: string;
  /** A container's pod sandbox ID ('' for a sandbox). */
  readonly sandboxId: string;
  /** The CRI labels and annotations the Docker labels carry (see ../conventions/labels.ts). */
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** The Docker labels the shim wrote (../conventions/labels.ts shimLabels), not those of the image. */
  readonly dockerLabels: Readonly<Record<string, string>>;
  /** Docker's state name: created, running, paused, restarting, removing, exited or dead. */
  readonly status: string;
  readonly state: ObjectState;
  /** Docker's creation time, in whole seconds (as its list gives it). */
  readonly createdSeconds: number;
  /** What Docker's list shows as Image: the reference the container was created from while it still names its image, else the image ID. */
  readonly image: string;
  readonly imageId: string;
  /** Docker's network mode ('host' for a pod on the node's network). */
  readonly networkMode: string;
  /** The cache's inspect document, when the cache answered; else undefined (ask Docker). */
  readonly inspect: ContainerInspect | undefined;
}

/**
 * What never changes of an object once Docker made it, so may be read without the shim's own
 * pending changes applied (ObjectFinder.identify): never its state, nor the inspect it came from.
 */
export type ShimIdentity = Pick<ShimObject, 'kind' | 'id' | 'name' | 'sandboxId' | 'labels' | 'annotations' | 'dockerLabels' | 'networkMode'>;

/** Docker's state name as CRI's container state (list and status agree on it). */
export function containerStateOf(status: string): ContainerState__Output {
  switch (status) {
    case 'created':
      return 'CONTAINER_CREATED';
    case 'running':
    case 'restarting':
    case 'paused':
      return 'CONTAINER_RUNNING';
    case 'exited':
    case 'dead':
      return 'CONTAINER_EXITED';
    default:
      return 'CONTAINER_UNKNOWN';
  }
}

/** Only a running pause container holds a usable pod; anything else is NOTREADY. */
export function sandboxStateOf(running: boolean): PodSandboxState__Output {
  return running ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY';
}

function kindOf(dockerLabels: Readonly<Record<string, string>>): ObjectKind | undefined {
  const type = dockerLabels[CONTAINER_TYPE_LABEL];
  return type === TYPE_SANDBOX ? 'sandbox' : type === TYPE_CONTAINER ? 'container' : undefined;
}

function objectOf(
  parts: Omit<ShimObject, 'kind' | 'sandboxId' | 'labels' | 'annotations' | 'state'>,
): ShimObject | undefined {
  const dockerLabels = shimLabels(parts.dockerLabels, parts.name);
  const kind = kindOf(dockerLabels);
  if (!kind) return undefined;
  const { labels, annotations } = fromDockerLabels(dockerLabels);
  return {
    ...parts,
    dockerLabels,
    kind,
    sandboxId: kind === 'container' ? (dockerLabels[SANDBOX_ID_LABEL] ?? '') : '',
    labels,
    annotations,
    state: kind === 'container' ? containerStateOf(parts.status) : sandboxStateOf(parts.status === 'running'),
  };
}

/** The object an inspect document shows (undefined: not one of the shim's); `image` as for ShimObject.image. */
export function objectFromInspect(c: ContainerInspect, image: string): ShimObject | undefined {
  return objectOf({
    id: c.Id,
    name: bareDockerName(c.Name),
    dockerLabels: c.Config.Labels ?? {},
    status: c.State.Status,
    createdSeconds: Math.floor(Date.parse(c.Created) / 1000),
    image,
    imageId: c.Image,
    networkMode: c.HostConfig.NetworkMode ?? '',
    inspect: c,
  });
}

/** The object a Docker list entry shows (undefined: not one of the shim's). */
export function objectFromSummary(c: ContainerSummary): ShimObject | undefined {
  return objectOf({
    id: c.Id,
    name: bareDockerName(c.Names?.[0] ?? ''),
    dockerLabels: c.Labels ?? {},
    status: c.State,
    createdSeconds: c.Created,
    image: c.Image,
    imageId: c.ImageID,
    networkMode: c.HostConfig?.NetworkMode ?? '',
    inspect: undefined,
  });
}

/** The one matcher: every part of the query holds for the object (IDs as prefixes). */
export function matchesObjectQuery(o: Pick<ShimObject, 'kind' | 'id' | 'sandboxId' | 'labels' | 'state'> & Partial<Pick<ShimObject, 'name'>>, q: ObjectQuery): boolean {
  if (q.kind !== 'any' && o.kind !== q.kind) return false;
  if (q.id && !o.id.startsWith(q.id)) return false;
  if (q.sandboxId && !o.sandboxId.startsWith(q.sandboxId)) return false;
  if (q.name && o.name !== q.name) return false;
  if (q.state !== undefined && o.state !== q.state) return false;
  return matchesLabelSelector(o.labels, q.labels);
}

/** The query from one of CRI's list filters (ContainerFilter, PodSandboxFilter and the stats filters). */
export function objectQueryOf(
  kind: ObjectKind,
  filter: { id?: string; podSandboxId?: string; state?: { state: ObjectState } | null; labelSelector?: Record<string, string> } | null | undefined,
): ObjectQuery {
  const q: ObjectQuery = { kind };
  if (filter?.id) q.id = filter.id;
  if (filter?.podSandboxId) q.sandboxId = filter.podSandboxId;
  if (filter?.state) q.state = filter.state.state;
  if (filter?.labelSelector && Object.keys(filter.labelSelector).length > 0) q.labels = filter.labelSelector;
  return q;
}

const HEX = /^[0-9a-f]+$/;

/**
 * The Docker list call that holds every object the query matches (a superset: the matcher
 * decides), or undefined when nothing can match (an ID part that is not hex). CRI labels are
 * Docker labels of the same key; a sandbox ID narrows Docker's list only when whole; Docker's
 * id filter matches anywhere in the ID, its name filter is a regular expression (the name is
 * anchored and its specials escaped). RUNNING containers are exactly Docker's running ones
 * (State.Running holds while paused or restarting), READY pods among them.
 */
export function dockerListOf(q: ObjectQuery): { all: boolean; filters: DockerFilters } | undefined {
  if ((q.id && !HEX.test(q.id)) || (q.sandboxId && !HEX.test(q.sandboxId))) return undefined;
  const label = [q.kind === 'any' ? CONTAINER_TYPE_LABEL : `${CONTAINER_TYPE_LABEL}=${q.kind === 'sandbox' ? TYPE_SANDBOX : TYPE_CONTAINER}`];
  if (q.sandboxId && isFullId(q.sandboxId)) label.push(`${SANDBOX_ID_LABEL}=${q.sandboxId}`);
  for (const [k, v] of Object.entries(q.labels ?? {})) label.push(`${k}=${v}`);
  const filters: DockerFilters = { label };
  if (q.id) filters.id = [q.id];
  if (q.name) filters.name = [`^/${q.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`];
  return { all: q.state !== 'CONTAINER_RUNNING' && q.state !== 'SANDBOX_READY', filters };
}

/** Containers by their pod's sandbox ID (those without one are left out). */
export function groupBySandbox(containers: readonly ShimObject[]): Map<string, ShimObject[]> {
  const out = new Map<string, ShimObject[]>();
  for (const c of containers) {
    if (!c.sandboxId) continue;
    const members = out.get(c.sandboxId);
    if (members) members.push(c);
    else out.set(c.sandboxId, [c]);
  }
  return out;
}
