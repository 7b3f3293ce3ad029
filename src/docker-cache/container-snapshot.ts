// The container documents the cache held, saved in the shim's root directory, so that a
// restarted shim answers its first calls without inspecting every container again (at 1,000
// containers the inspects took most of two seconds). They are only a head start: the first
// sync keeps a saved document only where Docker's list shows the container as the document
// does (listedAsHeld), and inspects every kept one again once it answers (container-store.ts).
// The file holds what Docker's own config.v2.json files hold (environment variables too), so
// it is readable by root only, like them. A missing or corrupt file is a cold start, logged.
import { isFullId } from '../conventions/ids';
import type { ContainerInspect } from '../docker/types';
import { errorMessage } from '../errors';
import { writeFileAtomic } from '../util/atomic-write';
import type { Logger } from '../util/logger';
import { readTextNoFollow } from '../util/read-no-follow';

const FORMAT = 'cri-docker-shim.containers/v1';

interface SnapshotDocument {
  format: typeof FORMAT;
  savedAt: string;
  containers: ContainerInspect[];
}

/** The documents in `text` that look like container inspects; anything else is left out. */
export function decodeContainerSnapshot(text: string): { containers: ContainerInspect[]; skipped: number } {
  const doc = JSON.parse(text) as Partial<SnapshotDocument> | null;
  if (doc === null || typeof doc !== 'object' || doc.format !== FORMAT || !Array.isArray(doc.containers)) {
    throw new Error(`not a ${FORMAT} document`);
  }
  const containers = doc.containers.filter(
    (c): c is ContainerInspect =>
      c !== null && typeof c === 'object' && typeof c.Id === 'string' && isFullId(c.Id) && typeof c.State?.Status === 'string' && typeof c.Config === 'object' && c.Config !== null,
  );
  return { containers, skipped: doc.containers.length - containers.length };
}

export function encodeContainerSnapshot(containers: Iterable<ContainerInspect>, savedAt: Date): string {
  const doc: SnapshotDocument = { format: FORMAT, savedAt: savedAt.toISOString(), containers: [...containers] };
  return JSON.stringify(doc);
}

export class ContainerSnapshotFile {
  constructor(
    readonly file: string,
    private readonly log: Logger,
  ) {}

  /** What was saved last; nothing when there is no file or it cannot be read (logged). */
  load(): ContainerInspect[] {
    let text: string;
    try {
      text = readTextNoFollow(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log.warn({ file: this.file, err: errorMessage(err) }, 'container snapshot unreadable; every container is inspected');
      return [];
    }
    try {
      const { containers, skipped } = decodeContainerSnapshot(text);
      if (skipped > 0) this.log.warn({ file: this.file, skipped }, 'container snapshot: entries that are not container documents left out');
      return containers;
    } catch (err) {
      this.log.warn({ file: this.file, err: errorMessage(err) }, 'container snapshot corrupt; every container is inspected');
      return [];
    }
  }

  async save(containers: Iterable<ContainerInspect>): Promise<void> {
    await writeFileAtomic(this.file, encodeContainerSnapshot(containers, new Date()));
  }
}
