// Docker labels that carry CRI state on the containers themselves, so everything can be
// recovered from Docker after a shim restart. Keys are dockershim's, for drop-in compatibility.
// A CRI label is stored as a Docker label of the same key; a CRI annotation as a Docker label
// with ANNOTATION_PREFIX, so that status and list give both back exactly as given.
import { InvalidArgumentError } from '../errors';
import { quote } from '../util/quote';

export const CONTAINER_TYPE_LABEL = 'io.kubernetes.docker.type';
export const TYPE_SANDBOX = 'podsandbox';
export const TYPE_CONTAINER = 'container';
/** On a container: the Docker ID of its pod's pause container. */
export const SANDBOX_ID_LABEL = 'io.kubernetes.sandbox.id';
/** On a container: where its CRI log file is (sandbox log_directory joined with log_path). */
export const CONTAINER_LOG_PATH_LABEL = 'io.kubernetes.container.logpath';
/** On a sandbox: the CRI runtime handler it was started with (absent for the default ''). */
export const RUNTIME_HANDLER_LABEL = 'io.kubernetes.cri-docker-shim.runtime-handler';
export const ANNOTATION_PREFIX = 'annotation.';

/** Labels the shim itself sets; never handed back to the client as CRI labels. */
export const INTERNAL_LABELS: ReadonlySet<string> = new Set([
  CONTAINER_TYPE_LABEL,
  SANDBOX_ID_LABEL,
  CONTAINER_LOG_PATH_LABEL,
  RUNTIME_HANDLER_LABEL,
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

/** Docker labels for a CRI object: its labels, its annotations (prefixed), then our internal ones. */
export function toDockerLabels(
  labels: Readonly<Record<string, string>>,
  annotations: Readonly<Record<string, string>>,
  internal: Readonly<Record<string, string>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) out[k] = v;
  for (const [k, v] of Object.entries(annotations)) out[ANNOTATION_PREFIX + k] = v;
  for (const [k, v] of Object.entries(internal)) out[k] = v;
  return out;
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
