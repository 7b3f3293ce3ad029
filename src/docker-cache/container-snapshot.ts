// The container documents the cache held, saved in the shim's root directory, so that a
// restarted shim answers its first calls without inspecting every container again (at 1,000
// containers the inspects took most of two seconds). They are only a head start, checked
// against Docker's own record of what happened since the save: its in-memory log of recent
// events (moby keeps the latest 256), which `GET /events?since=…&until=<now>` replays and then
// closes. When that log reaches back to the save, it holds every event since, and a saved
// document is kept only if no event since touched its container and Docker's list shows the
// container with the same name and state (`savedDocumentsHeld`). When it does not (the log
// overran, or dockerd restarted and its log starts after the save) every container is
// inspected: a cold start, logged. Kept documents are inspected again once the cache answers
// (container-documents.ts). The file holds what Docker's own config.v2.json files hold
// (environment variables too), so it is readable by root only, like them. A missing or corrupt
// file is a cold start, logged.
import { hasTypeLabel } from '../conventions/labels';
import { isFullId } from '../conventions/ids';
import type { DockerClient } from '../docker/client';
import type { ContainerInspect, ContainerSummary, DockerEvent } from '../docker/types';
import { errorMessage } from '../errors';
import { writeFileAtomic } from '../util/atomic-write';
import type { Logger } from '../util/logger';
import { readTextNoFollow } from '../util/read-no-follow';
import { RequestDeadline } from '../util/request-deadline';
import { actionForEvent } from './docker-events';

const FORMAT = 'cri-docker-shim.containers/v1';

interface SnapshotDocument {
  format: typeof FORMAT;
  savedAt: string;
  containers: ContainerInspect[];
}

/** What a previous run saved: the documents, and when (the shim's clock, ms). */
export interface SavedContainers {
  savedAtMs: number;
  containers: ContainerInspect[];
}

/**
 * How far apart the shim's clock and Docker's event times may be (one host's clock for both, but
 * for a remote engine), and how long an event may take to reach the cache: an event this little
 * before the save counts as after it.
 */
export const CLOCK_SLACK_MS = 1_000;
/** The most events a replay may carry (moby's log holds 256): a longer one is not believed. */
export const REPLAY_MAX_EVENTS = 1_024;
/** How long Docker may take to replay its log (it waits for `until` when its clock is behind). */
const REPLAY_TIMEOUT_MS = 5_000;

/** Which saved documents a first sync may hold as they are; `cold`: why none (every container is inspected). */
interface HeadStart {
  held: ReadonlySet<string>;
  cold: string | undefined;
}

function eventNs(ev: DockerEvent): number {
  return ev.timeNano || ev.time * 1e9;
}

/**
 * The saved documents that still hold, given Docker's replay of its event log (from before the
 * save to now) and its list now. Pure. The log reaches back to the save when it holds an event
 * from before it; then every event since is in it, and a container no event since touched (as
 * the cache would have acted on it: ./docker-events.ts) and listed with the saved name and state
 * is as saved.
 */
export function savedDocumentsHeld(saved: SavedContainers, replay: readonly DockerEvent[], listed: readonly ContainerSummary[]): HeadStart {
  const savedNs = (saved.savedAtMs - CLOCK_SLACK_MS) * 1e6;
  if (!replay.some((ev) => eventNs(ev) <= savedNs)) {
    return { held: new Set(), cold: "Docker's event log does not reach back to the snapshot (more events since, or dockerd restarted)" };
  }
  const byId = new Map(saved.containers.map((doc) => [doc.Id, doc]));
  const touched = new Set<string>();
  for (const ev of replay) {
    if (eventNs(ev) <= savedNs) continue;
    const action = actionForEvent(ev, (id) => byId.has(id));
    if (action.kind === 'refresh' || action.kind === 'oom' || action.kind === 'forget') touched.add(action.id);
  }
  const held = new Set<string>();
  for (const entry of listed) {
    const doc = byId.get(entry.Id);
    if (!doc || touched.has(entry.Id) || !hasTypeLabel(doc.Config.Labels)) continue;
    const name = doc.Name.startsWith('/') ? doc.Name : `/${doc.Name}`;
    if ((entry.Names ?? []).includes(name) && entry.State === doc.State.Status) held.add(entry.Id);
  }
  return { held, cold: undefined };
}

/** Docker's log of recent events, all of it (unfiltered), up to `untilMs`; rejects past REPLAY_MAX_EVENTS or REPLAY_TIMEOUT_MS. */
export async function replayEventLog(docker: Pick<DockerClient, 'events'>, untilMs: number, timeoutMs = REPLAY_TIMEOUT_MS): Promise<DockerEvent[]> {
  const out: DockerEvent[] = [];
  const deadline = new RequestDeadline(timeoutMs, undefined);
  try {
    // since=1: the whole log (0 would be read as "no since" by some daemons).
    for await (const ev of docker.events({ since: 1, until: untilMs / 1000 }, { signal: deadline.signal })) {
      out.push(ev);
      if (out.length > REPLAY_MAX_EVENTS) throw new Error(`Docker replayed more than ${REPLAY_MAX_EVENTS} events`);
    }
  } finally {
    deadline.end();
  }
  // A stream cut short ends quietly: what came may not be the whole log.
  if (deadline.timedOut) throw new Error(`Docker did not finish its replay within ${timeoutMs} ms`);
  return out;
}

/** The documents in `text` that look like container inspects; anything else is left out. */
export function decodeContainerSnapshot(text: string): { savedAtMs: number; containers: ContainerInspect[]; skipped: number } {
  const doc = JSON.parse(text) as Partial<SnapshotDocument> | null;
  if (doc === null || typeof doc !== 'object' || doc.format !== FORMAT || !Array.isArray(doc.containers)) {
    throw new Error(`not a ${FORMAT} document`);
  }
  const containers = doc.containers.filter(
    (c): c is ContainerInspect =>
      c !== null && typeof c === 'object' && typeof c.Id === 'string' && isFullId(c.Id) && typeof c.State?.Status === 'string' && typeof c.Config === 'object' && c.Config !== null,
  );
  const savedAtMs = typeof doc.savedAt === 'string' ? Date.parse(doc.savedAt) : NaN;
  if (!Number.isFinite(savedAtMs)) throw new Error('no savedAt time');
  return { savedAtMs, containers, skipped: doc.containers.length - containers.length };
}

/** About how many characters each piece of a snapshot's text holds. */
const PIECE_CHARS = 64 * 1024;

/**
 * The snapshot's text (JSON.stringify of the SnapshotDocument) in pieces of about PIECE_CHARS,
 * each made when asked for. At 1,000 containers the text is ~3.6 MB (Docker 20.10's documents):
 * made whole, the string (in V8's large-object space, which only a full collection frees) and its
 * UTF-8 copy were each that.
 */
export function* containerSnapshotText(containers: Iterable<ContainerInspect>, savedAt: Date): Generator<string, void, undefined> {
  // Taken now: the store may change while the pieces are written.
  const docs = [...containers];
  let piece = `{"format":${JSON.stringify(FORMAT)},"savedAt":${JSON.stringify(savedAt.toISOString())},"containers":[`;
  for (const [i, doc] of docs.entries()) {
    piece += (i === 0 ? '' : ',') + JSON.stringify(doc);
    if (piece.length >= PIECE_CHARS) {
      yield piece;
      piece = '';
    }
  }
  yield `${piece}]}`;
}

export class ContainerSnapshotFile {
  constructor(
    readonly file: string,
    private readonly log: Logger,
  ) {}

  /** What was saved last; undefined when there is no file or it cannot be read (logged). */
  load(): SavedContainers | undefined {
    let text: string;
    try {
      text = readTextNoFollow(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log.warn({ file: this.file, err: errorMessage(err) }, 'container snapshot unreadable; every container is inspected');
      return undefined;
    }
    try {
      const { savedAtMs, containers, skipped } = decodeContainerSnapshot(text);
      if (skipped > 0) this.log.warn({ file: this.file, skipped }, 'container snapshot: entries that are not container documents left out');
      return { savedAtMs, containers };
    } catch (err) {
      this.log.warn({ file: this.file, err: errorMessage(err) }, 'container snapshot corrupt; every container is inspected');
      return undefined;
    }
  }

  /** `savedAt`: the time the documents stand for (every event before it is in them). */
  async save(containers: Iterable<ContainerInspect>, savedAt = new Date()): Promise<void> {
    await writeFileAtomic(this.file, containerSnapshotText(containers, savedAt));
  }
}
