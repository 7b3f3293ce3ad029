// Docker labels that carry CRI state on the containers themselves, so everything can be
// recovered from Docker after a shim restart. Keys are dockershim's, for drop-in compatibility.
// A CRI label is stored as a Docker label of the same key; a CRI annotation as a Docker label
// with ANNOTATION_PREFIX, so that status and list give both back exactly as given.
//
// Docker merges an image's labels into its container's, and an image can carry any key (a log
// path, an annotation, a CRI label): so the shim records which labels it wrote (OWN_LABELS_LABEL)
// and reads back only those (shimLabels).
import { InvalidArgumentError } from '../errors';
import { quote } from '../util/quote';
import { bareDockerName } from './naming';

export const CONTAINER_TYPE_LABEL = 'io.kubernetes.docker.type';
export const TYPE_SANDBOX = 'podsandbox';
export const TYPE_CONTAINER = 'container';
/** On a container: the Docker ID of its pod's pause container. */
export const SANDBOX_ID_LABEL = 'io.kubernetes.sandbox.id';
/** On a container: where its CRI log file is (sandbox log_directory joined with log_path; '' none, always written). */
export const CONTAINER_LOG_PATH_LABEL = 'io.kubernetes.container.logpath';
/** On a sandbox: the CRI runtime handler it was started with ('' the default, always written). */
export const RUNTIME_HANDLER_LABEL = 'io.kubernetes.cri-docker-shim.runtime-handler';
/**
 * On every object the shim creates: the keys of the labels it wrote, and the Docker name it gave
 * the object (JSON, see ownLabelsRecord). The name ties the record to that object: an image
 * carrying a record of its own (one committed from a shim container, or made to pass for one)
 * names another object, and is not believed.
 */
const OWN_LABELS_LABEL = 'io.cri-docker-shim.own-labels';
const ANNOTATION_PREFIX = 'annotation.';

/**
 * Whether Docker labels (a container's, or a container event's attributes) carry the type
 * label: only such containers are the shim's business (the state cache holds only those).
 */
export function hasTypeLabel(labels: Readonly<Record<string, string>> | null | undefined): boolean {
  return labels?.[CONTAINER_TYPE_LABEL] !== undefined;
}

/** Labels the shim itself sets; never handed back to the client as CRI labels. */
const INTERNAL_LABELS: ReadonlySet<string> = new Set([
  CONTAINER_TYPE_LABEL,
  SANDBOX_ID_LABEL,
  CONTAINER_LOG_PATH_LABEL,
  RUNTIME_HANDLER_LABEL,
  OWN_LABELS_LABEL,
]);

/**
 * Refuses CRI labels that would pass for the shim's own (a log path, a sandbox ID, the object's
 * type) or for annotations once they are Docker labels: every create checks its request's
 * labels with this before anything is made.
 */
export function checkCriLabels(field: string, labels: Readonly<Record<string, string>>): void {
  for (const key of Object.keys(labels)) {
    if (INTERNAL_LABELS.has(key)) throw new InvalidArgumentError(`${field}: ${quote(key)} is reserved for the runtime`);
    if (key.startsWith(ANNOTATION_PREFIX)) {
      throw new InvalidArgumentError(`${field}: ${quote(key)} starts with ${quote(ANNOTATION_PREFIX)}, which the runtime uses for annotations`);
    }
  }
}

/**
 * Docker labels for a CRI object named `dockerName`: its labels, its annotations (prefixed), our
 * internal ones, and the record of all of these keys.
 */
export function toDockerLabels(
  labels: Readonly<Record<string, string>>,
  annotations: Readonly<Record<string, string>>,
  internal: Readonly<Record<string, string>>,
  dockerName: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) out[k] = v;
  for (const [k, v] of Object.entries(annotations)) out[ANNOTATION_PREFIX + k] = v;
  for (const [k, v] of Object.entries(internal)) out[k] = v;
  out[OWN_LABELS_LABEL] = ownLabelsRecord(dockerName, Object.keys(out));
  return out;
}

/** The value of OWN_LABELS_LABEL: the object's Docker name and the keys the shim wrote. */
function ownLabelsRecord(dockerName: string, keys: readonly string[]): string {
  return JSON.stringify({ name: bareDockerName(dockerName), keys: [...keys].sort() });
}

/** The keys the record vouches for, when it is one and names this object; else undefined. */
function recordedKeys(docker: Readonly<Record<string, string>>, dockerName: string): ReadonlySet<string> | undefined {
  const raw = docker[OWN_LABELS_LABEL];
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { name, keys } = parsed as { name?: unknown; keys?: unknown };
  if (name !== bareDockerName(dockerName) || !Array.isArray(keys) || !keys.every((k) => typeof k === 'string')) return undefined;
  return new Set(keys as string[]);
}

/**
 * The labels of the object named `dockerName` that the shim wrote: those its record names. An
 * object without a record that names it (an older shim's, cri-dockerd's, or one whose image
 * carries a record) is read as it stands, as dockershim read it; for those, only the log path
 * is checked against the image (containerLogPath).
 */
export function shimLabels(docker: Readonly<Record<string, string>> | null | undefined, dockerName: string): Readonly<Record<string, string>> {
  const all = docker ?? {};
  const keys = recordedKeys(all, dockerName);
  if (!keys) return all;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(all)) if (keys.has(k)) out[k] = v;
  return out;
}

/**
 * Where the shim writes a container's CRI log ('' nowhere), from its Docker labels and name.
 * The shim records the path at every create, so a recorded container's own label is the one.
 * One without a record (made by an older shim, which wrote no label for an empty path, or by
 * cri-dockerd, which always writes one) may show its image's label instead: a path equal to the
 * image's own label of that key is taken for the image's, and is none. `imageLabels` undefined:
 * the image is gone (Docker removes an image a container uses only by force), and the label stands.
 */
export function containerLogPath(
  docker: Readonly<Record<string, string>> | null | undefined,
  dockerName: string,
  imageLabels: Readonly<Record<string, string>> | null | undefined,
): string {
  const all = docker ?? {};
  const path = all[CONTAINER_LOG_PATH_LABEL] ?? '';
  const recorded = recordedKeys(all, dockerName);
  if (recorded) return recorded.has(CONTAINER_LOG_PATH_LABEL) ? path : '';
  return imageLabels?.[CONTAINER_LOG_PATH_LABEL] === path ? '' : path;
}

/** Whether the log path needs the image's labels to be read (a container without the shim's record). */
export function logPathNeedsImage(docker: Readonly<Record<string, string>> | null | undefined, dockerName: string): boolean {
  const all = docker ?? {};
  return (all[CONTAINER_LOG_PATH_LABEL] ?? '') !== '' && recordedKeys(all, dockerName) === undefined;
}

/** Splits Docker labels back into the CRI labels and annotations they were made from. */
export function fromDockerLabels(docker: Readonly<Record<string, string>> | null | undefined): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  const labels: Record<string, string> = {};
  const annotations: Record<string, string> = {};
  for (const [k, v] of Object.entries(docker ?? {})) {
    if (INTERNAL_LABELS.has(k)) continue;
    if (k.startsWith(ANNOTATION_PREFIX)) annotations[k.slice(ANNOTATION_PREFIX.length)] = v;
    else labels[k] = v;
  }
  return { labels, annotations };
}

/** True when every key=value of the selector is among the labels (CRI label_selector semantics). */
export function matchesLabelSelector(
  labels: Readonly<Record<string, string>>,
  selector: Readonly<Record<string, string>> | null | undefined,
): boolean {
  for (const [k, v] of Object.entries(selector ?? {})) if (labels[k] !== v) return false;
  return true;
}

export function runtimeHandlerFromDocker(docker: Readonly<Record<string, string>> | null | undefined): string {
  return docker?.[RUNTIME_HANDLER_LABEL] ?? '';
}
