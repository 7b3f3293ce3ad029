// Which container list queries the cache can answer exactly, and Docker's filter semantics for
// those it can. Pure. The cache holds only containers carrying the shim's type label, so it
// answers a query only when the query itself demands that label: then no container outside
// the cache could ever match. The pod's-containers query of StopPodSandbox and
// RemovePodSandbox (by sandbox label alone) therefore goes to Docker, so stopping a pod never
// misses a container whose creation the event stream has not reported yet.
import type { DockerFilters } from '../docker/types';
import { CONTAINER_TYPE_LABEL } from '../conventions/labels';

/** Labels that make a container the cache's business. */
export const TRACKED_LABELS: readonly string[] = [CONTAINER_TYPE_LABEL];

export function isTracked(labels: Readonly<Record<string, string>> | null | undefined): boolean {
  return TRACKED_LABELS.some((k) => labels?.[k] !== undefined);
}

export interface LabelTerm {
  key: string;
  /** undefined: the label only has to be present. */
  value: string | undefined;
}

export interface CacheableListQuery {
  /** false: running containers only (Docker's default). */
  all: boolean;
  labels: LabelTerm[];
  /** Docker's `id` filter: any of these found in the ID (undefined: no id filter). */
  idParts: string[] | undefined;
}

const HEX = /^[0-9a-f]+$/;

function parseLabelTerm(term: string): LabelTerm {
  const eq = term.indexOf('=');
  return eq < 0 ? { key: term, value: undefined } : { key: term.slice(0, eq), value: term.slice(eq + 1) };
}

/**
 * The query in a form the cache can evaluate, or undefined when only Docker can answer it
 * (sizes wanted, a filter other than label and id, an id filter that is not plain hex, or no
 * label term that pins a tracked label).
 */
export function cacheableListQuery(query: { all: boolean; filters?: DockerFilters; size?: boolean }): CacheableListQuery | undefined {
  if (query.size === true) return undefined;
  const filters = query.filters ?? {};
  for (const key of Object.keys(filters)) if (key !== 'label' && key !== 'id') return undefined;
  const labels = (filters.label ?? []).map(parseLabelTerm);
  if (!labels.some((t) => TRACKED_LABELS.includes(t.key))) return undefined;
  let idParts: string[] | undefined;
  if (filters.id !== undefined && filters.id.length > 0) {
    // Docker treats each id value as a regular expression; plain hex is a substring search.
    if (!filters.id.every((v) => HEX.test(v))) return undefined;
    idParts = [...filters.id];
  }
  return { all: query.all, labels, idParts };
}

/** Docker's list filtering for one container: every label term holds, some id part occurs. */
export function matchesListQuery(
  c: { id: string; running: boolean; labels: Readonly<Record<string, string>> | null | undefined },
  q: CacheableListQuery,
): boolean {
  if (!q.all && !c.running) return false;
  const labels = c.labels ?? {};
  for (const t of q.labels) {
    const v = labels[t.key];
    if (v === undefined) return false;
    if (t.value !== undefined && v !== t.value) return false;
  }
  if (q.idParts && !q.idParts.some((p) => c.id.includes(p))) return false;
  return true;
}

