// Sandbox checkpoints on disk: <root>/sandbox/<id>.json, one per pod sandbox, and beside it
// cri-dockerd's own checkpoint of the same pod, <root>/sandbox/<id> (./cri-dockerd-format.ts),
// so a node can go back to cri-dockerd with its pods. Where ours is missing (a pod cri-dockerd
// made, or ours deleted by a cri-dockerd that ran meanwhile: it removes every file there whose
// checksum it cannot verify), cri-dockerd's is read instead.
// Writes are atomic (../util/atomic-write.ts, then an fsync of the directory) so a crash leaves
// the old file or the new one, never half of one; temp files start with '.', which cri-dockerd
// does not list as checkpoints. Our file failing its checksum is reported, removed and treated
// as absent; cri-dockerd's failing is reported and left alone. Files are read without
// following symlinks. IDs are checked to be full Docker IDs before they become file names, so
// nothing from a request can walk out of the directory; other names there are ignored.
import { readdirSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { isFullId } from '../conventions/ids';
import { diskFullOr, InvalidArgumentError } from '../errors';
import type { Logger } from '../util/logger';
import { writeFileAtomic } from '../util/atomic-write';
import { readTextNoFollow } from '../util/read-no-follow';
import { decodeCheckpoint, encodeCheckpoint, type SandboxCheckpoint } from './checkpoint';
import { adoptCriDockerdCheckpoint, decodeCriDockerdCheckpoint, encodeCriDockerdCheckpoint } from './cri-dockerd-format';

const FILE_SUFFIX = '.json';

function isErrno(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === code;
}

export class CheckpointFiles {
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

  /** cri-dockerd's checkpoint file of a sandbox; the same check of the ID. */
  criDockerdPathOf(id: string): string {
    return path.join(this.directory, path.basename(this.pathOf(id), FILE_SUFFIX));
  }

  /**
   * Writes our checkpoint and cri-dockerd's. A full disk is a DiskFullError naming the directory;
   * the caller removes what may be half-made (remove()), as after any failed write.
   */
  async write(checkpoint: SandboxCheckpoint): Promise<void> {
    const ours = this.pathOf(checkpoint.id);
    try {
      await fs.mkdir(this.directory, { recursive: true, mode: 0o700 });
      await Promise.all([
        writeFileAtomic(ours, encodeCheckpoint(checkpoint)),
        writeFileAtomic(this.criDockerdPathOf(checkpoint.id), encodeCriDockerdCheckpoint(checkpoint)),
      ]);
      await this.syncDirectory();
    } catch (err) {
      throw diskFullOr(err, this.directory);
    }
  }

  /** The checkpoint of `id`: ours, else cri-dockerd's; undefined when neither is readable (ours, corrupt, is removed). */
  async read(id: string): Promise<SandboxCheckpoint | undefined> {
    return this.readOne(id);
  }

  /** Removes the checkpoint of `id`; a missing one is fine. */
  async remove(id: string): Promise<void> {
    await Promise.all([fs.rm(this.pathOf(id), { force: true }), fs.rm(this.criDockerdPathOf(id), { force: true })]);
  }

  /** IDs of every checkpoint file, ours or cri-dockerd's (valid or not: read() decides). */
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
   * Every readable checkpoint; corrupt ones of ours are removed on the way. Read synchronously: it runs
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
    const present = new Set(names);
    const all = (await Promise.all(idsAmong(names).map((id) => this.readOne(id)))).filter((c): c is SandboxCheckpoint => c !== undefined);
    // Pods made by a shim that did not yet write cri-dockerd's checkpoint get theirs now (once,
    // before any call can remove the pod), so the node can still go back to cri-dockerd.
    await this.writeMissingCriDockerd(all.filter((c) => !c.fromCriDockerd && !present.has(c.id)));
    return all;
  }

  private async writeMissingCriDockerd(own: readonly SandboxCheckpoint[]): Promise<void> {
    if (own.length === 0) return;
    try {
      await Promise.all(own.map((c) => writeFileAtomic(this.criDockerdPathOf(c.id), encodeCriDockerdCheckpoint(c))));
      await this.syncDirectory();
      this.log.info({ count: own.length }, "wrote cri-dockerd's checkpoints of pods that had none");
    } catch (err) {
      this.log.warn({ error: (err as Error).message }, "could not write cri-dockerd's checkpoints of pods that had none");
    }
  }

  /**
   * One sandbox's checkpoint: ours, else cri-dockerd's. Read synchronously (see readAll); only
   * the removal of a corrupt file of ours is waited for.
   */
  private async readOne(id: string): Promise<SandboxCheckpoint | undefined> {
    const file = this.pathOf(id);
    const text = this.textOf(file);
    if (text !== undefined) {
      const decoded = decodeCheckpoint(text);
      if (decoded.ok && decoded.checkpoint.id === id) return decoded.checkpoint;
      const reason = decoded.ok ? `it names sandbox ${decoded.checkpoint.id}` : decoded.reason;
      this.log.warn({ file, reason }, 'removing corrupt sandbox checkpoint');
      await fs.rm(file, { force: true });
    }
    return this.criDockerdCheckpoint(id);
  }

  /** The sandbox as cri-dockerd's checkpoint records it; a file that is not one is logged and left alone. */
  private criDockerdCheckpoint(id: string): SandboxCheckpoint | undefined {
    const file = this.criDockerdPathOf(id);
    const text = this.textOf(file);
    if (text === undefined) return undefined;
    const decoded = decodeCriDockerdCheckpoint(text);
    if (decoded.ok) return adoptCriDockerdCheckpoint(id, decoded.checkpoint);
    this.log.warn({ file, reason: decoded.reason }, "skipping a file that is not a valid cri-dockerd sandbox checkpoint");
    return undefined;
  }

  /** A file's text; undefined when it is absent, or cannot be read as a plain file (logged: a symlink, a directory, no access). */
  private textOf(file: string): string | undefined {
    try {
      return readTextNoFollow(file);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) this.log.warn({ file, error: (err as Error).message }, 'skipping an unreadable sandbox checkpoint file');
      return undefined;
    }
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

/** The sandbox IDs among a directory's file names: full IDs, with our suffix or (cri-dockerd's) none. */
function idsAmong(names: readonly string[]): string[] {
  const ids = new Set(names.map((n) => (n.endsWith(FILE_SUFFIX) ? n.slice(0, -FILE_SUFFIX.length) : n)).filter(isFullId));
  return [...ids];
}
