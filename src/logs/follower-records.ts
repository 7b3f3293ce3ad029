// What the log follower of each container must remember across a shim restart: where the
// container's CRI log goes, whether it has a TTY, where writing stood at the last save (and,
// reading Docker's json-file log, where in that file), and whether all its output is already
// written. One small JSON file per container under the
// shim's root directory, named by the container's (validated) ID, replaced atomically.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { validateId } from '../conventions/ids';
import { diskFullOr } from '../errors';
import type { ResumePoint } from './cri-format';

/** A byte offset in one json-file log (device and inode in decimal: they can exceed 2^53). */
export interface JsonLogPosition {
  device: string;
  inode: string;
  /** The start of the first line not yet written to the CRI log (or not yet known to be). */
  offset: number;
}

export interface FollowerRecord {
  logPath: string;
  tty: boolean;
  /**
   * Where writing stood at the last save: when the current file was opened (a reopen starts an
   * empty file), and, reading a json-file log, when `jsonLog` was saved with it.
   */
  resume?: ResumePoint;
  /** The json-file log position `resume` belongs to (a follower that reads the file itself). */
  jsonLog?: JsonLogPosition;
  /** All output is in the file: nothing to resume. */
  complete: boolean;
  /**
   * The path is the shim's own, not an image's label (see ../conventions/labels.ts
   * containerLogPath): StartContainer read it so, or a resumed follower checked it. A record of
   * an older shim has no such mark, and its follower checks before it writes.
   */
  checked?: boolean;
}

function jsonLogPosition(value: unknown): JsonLogPosition | undefined {
  const v = value as Partial<JsonLogPosition> | undefined;
  if (!v || typeof v.device !== 'string' || typeof v.inode !== 'string' || !/^\d+$/.test(v.device) || !/^\d+$/.test(v.inode)) return undefined;
  if (typeof v.offset !== 'number' || !Number.isSafeInteger(v.offset) || v.offset < 0) return undefined;
  return { device: v.device, inode: v.inode, offset: v.offset };
}

export class FollowerRecordStore {
  readonly dir: string;

  constructor(rootDirectory: string) {
    this.dir = path.join(rootDirectory, 'container-logs');
  }

  private file(containerId: string): string {
    return path.join(this.dir, `${validateId('container_id', containerId)}.json`);
  }

  /** Replaces the record; a full disk is a DiskFullError naming the directory, and leaves no temp file. */
  save(containerId: string, state: FollowerRecord): void {
    const target = this.file(containerId);
    const temp = `${target}.tmp`;
    try {
      fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      fs.writeFileSync(temp, JSON.stringify(state), { mode: 0o600 });
      fs.renameSync(temp, target);
    } catch (err) {
      fs.rmSync(temp, { force: true });
      throw diskFullOr(err, this.dir);
    }
  }

  load(containerId: string): FollowerRecord | undefined {
    try {
      const parsed = JSON.parse(fs.readFileSync(this.file(containerId), 'utf8')) as Partial<FollowerRecord>;
      if (typeof parsed.logPath !== 'string' || !path.isAbsolute(parsed.logPath)) return undefined;
      const jsonLog = jsonLogPosition(parsed.jsonLog);
      return {
        logPath: parsed.logPath,
        tty: parsed.tty === true,
        resume: parsed.resume,
        ...(jsonLog ? { jsonLog } : {}),
        complete: parsed.complete === true,
        ...(parsed.checked === true ? { checked: true } : {}),
      };
    } catch {
      return undefined;
    }
  }

  /**
   * Removes the container's record (none is fine). In the thread pool: RemoveContainer asks for
   * it beside Docker's removal, whose request must not wait behind a sync unlink.
   */
  async remove(containerId: string): Promise<void> {
    try {
      await fs.promises.unlink(this.file(containerId));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  /** IDs of every container with saved state (file names that are not IDs are ignored). */
  list(): string[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return [];
    }
    return names.filter((n) => /^[0-9a-f]{1,64}\.json$/.test(n)).map((n) => n.slice(0, -'.json'.length));
  }
}
