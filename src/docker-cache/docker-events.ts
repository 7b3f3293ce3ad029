// What the cache does about each Docker event. Pure.
import type { DockerEvent, DockerFilters } from '../docker/types';
import { hasTypeLabel } from '../conventions/labels';

/**
 * Container actions after which a container's inspect document may differ. Not `kill` (a
 * signal sent: nothing an inspect shows changes until the `die` that may follow) nor `stop`
 * (Docker sends it after the `die` that carried the change): each cost an inspect per stop
 * that read the same document again.
 */
const CONTAINER_ACTIONS = [
  'create',
  'start',
  'die',
  'destroy',
  'rename',
  'update',
  'oom',
  'pause',
  'unpause',
  'restart',
] as const;

/** Docker's word for the OOM killer having acted in a container's cgroup. */
const OOM = 'oom';

/**
 * Docker reports a health check's verdict changing as "health_status: <status>"; asking for
 * it makes dockerd match every `event` value as a prefix, which none of the others mind.
 */
const HEALTH_STATUS = 'health_status';

/** Network actions that change a container's NetworkSettings; Attributes.container names it. */
const NETWORK_ACTIONS = ['connect', 'disconnect'] as const;

/**
 * Image actions after which a list or inspect of images may differ. `create` (API 1.46) tells of
 * a built image, tagged or not; before it an untagged build went unannounced.
 */
const IMAGE_ACTIONS = ['pull', 'tag', 'untag', 'delete', 'import', 'load', 'create'] as const;

/** A container commit makes an image; only a container event tells of an untagged one. */
const COMMIT = 'commit';

/**
 * The subscription: only these types and actions, so dockerd never sends the exec_* events
 * kubelet's probes cause by the hundred. Docker matches `event` values exactly.
 */
export const EVENT_FILTERS: DockerFilters = {
  type: ['container', 'network', 'image'],
  event: [...new Set<string>([...CONTAINER_ACTIONS, HEALTH_STATUS, ...NETWORK_ACTIONS, ...IMAGE_ACTIONS, COMMIT])],
};

type EventAction =
  | { kind: 'refresh'; id: string }
  /** Docker says the OOM killer acted in the container: remember it for the run, and re-inspect. */
  | { kind: 'oom'; id: string }
  | { kind: 'forget'; id: string }
  | { kind: 'images-changed' }
  | { kind: 'ignore' };

const containerActions: ReadonlySet<string> = new Set(CONTAINER_ACTIONS);
const networkActions: ReadonlySet<string> = new Set(NETWORK_ACTIONS);
const imageActions: ReadonlySet<string> = new Set(IMAGE_ACTIONS);

/**
 * `isKnown` says whether the cache holds a container; network events carry the network's
 * labels, not the container's, so only the cache can tell whether the container is tracked.
 */
export function actionForEvent(ev: DockerEvent, isKnown: (id: string) => boolean): EventAction {
  const attrs = ev.Actor?.Attributes ?? {};
  switch (ev.Type) {
    case 'container': {
      const id = ev.Actor?.ID ?? '';
      if (ev.Action === COMMIT) return { kind: 'images-changed' };
      const relevant = containerActions.has(ev.Action) || ev.Action.startsWith(`${HEALTH_STATUS}:`);
      if (!relevant || id === '') return { kind: 'ignore' };
      // Container events carry the container's labels among their attributes.
      if (!hasTypeLabel(attrs) && !isKnown(id)) return { kind: 'ignore' };
      if (ev.Action === 'destroy') return { kind: 'forget', id };
      return ev.Action === OOM ? { kind: 'oom', id } : { kind: 'refresh', id };
    }
    case 'network': {
      const id = attrs.container ?? '';
      if (!networkActions.has(ev.Action) || id === '' || !isKnown(id)) return { kind: 'ignore' };
      return { kind: 'refresh', id };
    }
    case 'image':
      return imageActions.has(ev.Action) ? { kind: 'images-changed' } : { kind: 'ignore' };
    default:
      return { kind: 'ignore' };
  }
}
