// Sandbox checkpoints on disk: <root>/sandbox/<id>.json, one per pod sandbox.
// Writes are atomic (temp file, fsync, rename, fsync of the directory) so a crash leaves the
// old file or the new one, never half of one. A file that fails its checksum is reported,
// removed and treated as absent. IDs are checked to be full Docker IDs before they become
// file names, so nothing from a request can walk out of the directory.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { isFullId } from '../conventions/ids';
import { InvalidArgumentError } from '../errors';
import type { Logger } from '../util/logger';
import { decodeCheckpoint, encodeCheckpoint, type SandboxCheckpoint } from './checkpoint';

const FILE_SUFFIX = '.json';

function isErrno(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === code;
}

export class CheckpointStore {
  readonly directory: string;

  constructor(
    rootDirectory: string,
    private readonly log: Logger,
  ) {
    this.directory = path.join(rootDirectory, 'sandbox');
  }

  /** The file of a sandbox; throws InvalidArgumentError for anything but a full Docker ID. */
  pathOf(id: string): string {
    if (!isFullId(id)) throw new InvalidArgumentError(`checkpoint: ${JSON.stringify(id)} is not a full sandbox ID`);
    return path.join(this.directory, id + FILE_SUFFIX);
  }

  async write(checkpoint: SandboxCheckpoint): Promise<void> {
    const target = this.pathOf(checkpoint.id);
    await fs.mkdir(this.directory, { recursive: true, mode: 0o700 });
    const temp = `${target}.tmp-${randomBytes(6).toString('hex')}`;
    const file = await fs.open(temp, 'wx', 0o600);
    try {
      await file.writeFile(encodeCheckpoint(checkpoint), 'utf8');
      await file.sync();
    } catch (err) {
      await file.close();
      await fs.rm(temp, { force: true });
      throw err;
    }
    await file.close();
    try {
      await fs.rename(temp, target);
    } catch (err) {
      await fs.rm(temp, { force: true });
      throw err;
    }
    await this.syncDirectory();
  }

  /** The checkpoint of `id`, or undefined when there is none or it was corrupt (then it is removed). */
  async read(id: string): Promise<SandboxCheckpoint | undefined> {
    const file = this.pathOf(id);
    let text: string;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return undefined;
      throw err;
    }
    return this.decoded(id, file, text);
  }

  /** Removes the checkpoint of `id`; a missing one is fine. */
  async remove(id: string): Promise<void> {
    await fs.rm(this.pathOf(id), { force: true });
  }

  /** IDs of every checkpoint file (valid or not: read() decides). */
  async ids(): Promise<string[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.directory);
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return [];
      throw err;
    }
    return idsAmong(names);
  }

  /**
   * Every readable checkpoint; corrupt ones are removed on the way. Read synchronously: it runs
   * once, at start-up, where a hundred small files take ~2 ms this way and 15-35 ms through
   * fs/promises (an open, stat, read and close on the thread pool for each, and a callback for
   * each on the event loop the first calls are waiting for).
   */
  async readAll(): Promise<SandboxCheckpoint[]> {
    let names: string[];
    try {
      names = readdirSync(this.directory);
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return [];
      throw err;
    }
    const all: Array<Promise<SandboxCheckpoint | undefined>> = [];
    for (const id of idsAmong(names)) {
      const file = this.pathOf(id);
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        // Removed since the listing: absent, as read() would say.
        if (isErrno(err, 'ENOENT')) continue;
        throw err;
      }
      all.push(this.decoded(id, file, text));
    }
    return (await Promise.all(all)).filter((c): c is SandboxCheckpoint => c !== undefined);
  }

  /** The checkpoint a file's text holds, or undefined when it is corrupt (the file is removed). */
  private async decoded(id: string, file: string, text: string): Promise<SandboxCheckpoint | undefined> {
    const decoded = decodeCheckpoint(text);
    if (decoded.ok && decoded.checkpoint.id === id) return decoded.checkpoint;
    const reason = decoded.ok ? `it names sandbox ${decoded.checkpoint.id}` : decoded.reason;
    this.log.warn({ file, reason }, 'removing corrupt sandbox checkpoint');
    await fs.rm(file, { force: true });
    return undefined;
  }

  private async syncDirectory(): Promise<void> {
    const dir = await fs.open(this.directory, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}

/** The sandbox IDs among a directory's file names: full IDs with the checkpoint suffix. */
function idsAmong(names: readonly string[]): string[] {
  return names
    .filter((n) => n.endsWith(FILE_SUFFIX))
    .map((n) => n.slice(0, -FILE_SUFFIX.length))
    .filter(isFullId);
}
