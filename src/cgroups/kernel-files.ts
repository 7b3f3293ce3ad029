// Reads the kernel's pseudo-files (cgroup files, /proc) that the stats and metrics RPCs read
// on every call. They are rendered from memory, a few hundred bytes to a few KiB, and never
// wait on a disk, so they are read synchronously: fs.promises costs several thread-pool round
// trips and a fresh buffer per file, which at a few hundred containers was most of a scrape's
// CPU. Opening such a file costs more than reading it (measured here: open + read + close
// ~23 µs, a positioned read of a file already open ~6 µs), so a file read for an owner (a
// container) stays open until the owner is released; a read at offset 0 makes the kernel
// render it afresh. A removed cgroup's kept descriptor fails to read, and the file is opened
// again by its path, which then says ENOENT; but until it is closed it pins the removed cgroup in
// the kernel, so the owner is released as soon as its container is known to have stopped
// (./reader.ts), not at some later read.
// Files in /proc/<pid>/net are the exception, read without an owner: an open one holds a
// reference to the process's network namespace, which outlives the process (and keeps its
// interfaces, so a stopped pod's veth and address) until the descriptor is closed.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Why a file could not be read, other than its not existing. */
type KernelFileErrorHandler = (file: string, err: NodeJS.ErrnoException) => void;

/** Larger contents (a blkio file listing many devices) are read the ordinary way. */
const BUFFER_BYTES = 64 * 1024;
/** Absent is normal: the kernel lacks that file here, or the container (or process) just went. */
const ABSENT_CODES = new Set(['ENOENT', 'ESRCH']);

/** Held files' ceiling: 1,000 containers' stats and metrics read ~8,000 files; a node runs at most a few hundred. */
const MAX_HELD_FILES = 32_768;
/** Below this holding files is not worth the descriptors: every read opens its file. */
const MIN_HELD_FILES = 64;

/**
 * How many files to keep open for a process whose descriptor limit is `openFilesLimit`: a quarter
 * of it, within [MIN_HELD_FILES, MAX_HELD_FILES]. With the Docker sockets' 5/16
 * (docker/socket-pool.ts) that leaves over half for the clients' connections and the rest. At
 * the unit's 1,048,576 and at 131,072: 32,768; at Linux's default soft 1,024: 256. Pure.
 */
export function heldFilesCap(openFilesLimit: number): number {
  return Math.max(MIN_HELD_FILES, Math.min(MAX_HELD_FILES, Math.floor(openFilesLimit / 4)));
}

export class KernelFiles {
  private readonly byOwner = new Map<string, Map<string, number>>();
  private held = 0;
  private readonly buffer = Buffer.allocUnsafe(BUFFER_BYTES);
  /** "<hierarchy>\0<file name>" pairs known to be absent on this host. */
  private readonly absent = new Set<string>();

  constructor(
    private readonly onError: KernelFileErrorHandler = () => undefined,
    /** Caps the descriptors kept open in all (heldFilesCap); past it files are opened per read. */
    private readonly limit = heldFilesCap(1024),
  ) {}

  /** Descriptors kept open. */
  get count(): number {
    return this.held;
  }

  /**
   * The file's current text; undefined when it does not exist, or cannot be read (reported to
   * onError). With `owner`, the file is kept open for the owner's next read.
   */
  read(file: string, owner?: string): string | undefined {
    try {
      return owner === undefined ? this.readOnce(file) : this.readHeld(owner, file);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (!ABSENT_CODES.has(e.code ?? '')) this.onError(file, e);
      return undefined;
    }
  }

  /**
   * `name` in `dir`, unless this host is known not to have it (see hostFile). A file the owner
   * holds open is read at once: it exists, and the stats read every container's files on every
   * call, so the path is joined without normalising (`dir` is a cgroup directory, already
   * normal) and the host check is made only for a file not held.
   */
  optional(dir: string | undefined, name: string, owner?: string): string | undefined {
    if (dir === undefined) return undefined;
    const file = `${dir}/${name}`;
    const held = owner === undefined ? undefined : this.byOwner.get(owner)?.get(file);
    if (held === undefined && this.absent.has(absentKey(dir, name))) return undefined;
    return this.read(file, owner);
  }

  /**
   * `name` in the cgroup `dir`, as optional reads it. A file missing from a cgroup that still
   * exists (its cgroup.procs reads) is one this host lacks (memory.memsw.* without swap
   * accounting, pids.current without the pids controller): every cgroup of that hierarchy
   * lacks it, so it is not looked for again, as a failed open costs an exception each time.
   */
  hostFile(dir: string | undefined, name: string, owner?: string): string | undefined {
    const text = this.optional(dir, name, owner);
    if (text === undefined && dir !== undefined) {
      const key = absentKey(dir, name);
      if (!this.absent.has(key) && this.read(path.join(dir, 'cgroup.procs')) !== undefined) this.absent.add(key);
    }
    return text;
  }

  /** Closes what `owner` holds (its container is gone, or has a new process and cgroup). */
  release(owner: string): void {
    const files = this.byOwner.get(owner);
    if (!files) return;
    for (const fd of files.values()) closeQuietly(fd);
    this.held -= files.size;
    this.byOwner.delete(owner);
  }

  owners(): IterableIterator<string> {
    return this.byOwner.keys();
  }

  closeAll(): void {
    for (const owner of [...this.byOwner.keys()]) this.release(owner);
  }

  private readOnce(file: string): string {
    const fd = fs.openSync(file, 'r');
    try {
      return this.readOpen(fd, file);
    } finally {
      closeQuietly(fd);
    }
  }

  private readHeld(owner: string, file: string): string {
    const fd = this.byOwner.get(owner)?.get(file);
    if (fd !== undefined) {
      try {
        return this.readOpen(fd, file);
      } catch {
        this.forget(owner, file, fd);
      }
    }
    if (this.held >= this.limit) return this.readOnce(file);
    const fresh = fs.openSync(file, 'r');
    let text: string;
    try {
      text = this.readOpen(fresh, file);
    } catch (err) {
      closeQuietly(fresh);
      throw err;
    }
    let files = this.byOwner.get(owner);
    if (!files) this.byOwner.set(owner, (files = new Map()));
    files.set(file, fresh);
    this.held++;
    return text;
  }

  private readOpen(fd: number, file: string): string {
    const n = fs.readSync(fd, this.buffer, 0, BUFFER_BYTES, 0);
    return n < BUFFER_BYTES ? this.buffer.toString('utf8', 0, n) : fs.readFileSync(file, 'utf8');
  }

  private forget(owner: string, file: string, fd: number): void {
    closeQuietly(fd);
    this.byOwner.get(owner)?.delete(file);
    this.held--;
  }
}

function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // already unusable; nothing to give back
  }
}

/**
 * The hierarchy is the path up to its fifth slash (/sys/fs/cgroup/memory of a v1 controller,
 * /sys/fs/cgroup/<first level> under v2). Found with indexOf: it runs for every optional read.
 */
function absentKey(dir: string, name: string): string {
  let end = 0;
  for (let slashes = 0; slashes < 5 && end !== -1; slashes++) end = dir.indexOf('/', end + (slashes === 0 ? 0 : 1));
  return `${end === -1 ? dir : dir.slice(0, end)}\0${name}`;
}
