// Reads containers' cgroup files, for the stats (../stats), the metrics (../pod-metrics) and the
// storage figures (../storage, which asks whether a container ran): one instance per shim, so a
// file the three read is opened once. It finds a container's cgroup directories from its
// process once per process (a restarted container has a new PID, and is looked up again), keeps
// the files it reads open for the container between calls (./kernel-files.ts), tells a cgroup
// that is gone from a file this host lacks, and logs an unreadable file once.
//
// Every read here is synchronous, the mount table and /proc/<pid>/cgroup included: they are
// kernel pseudo-files answered from memory, and fs/promises' thread-pool round trips (open,
// fstat, read, close) cost several times the read itself (measured: ~100 ms against ~25 ms for
// 20 containers' files), so the synchronous read is the faster one, and the one way here.
import * as path from 'node:path';
import type { CgroupDriver } from '../config/flags';
import type { Logger } from '../util/logger';
import { KernelFiles } from './kernel-files';
import { cpuUsageNs, parsePids, type CgroupFiles } from './parse';
import {
  cgroupPathFor,
  dirOfFile,
  dirsFromCgroupPath,
  dirsFromProcCgroup,
  parseMountInfo,
  parseProcCgroup,
  procsDirOf,
  type CgroupDirs,
  type CgroupMount,
} from './paths';

/** The files whose absence means the cgroup itself is gone (its container stopped meanwhile). */
const PRESENCE_FILES = {
  1: ['cpuacct.usage', 'memory.usage_in_bytes'],
  2: ['cpu.stat', 'memory.current'],
} as const;

/** The presence file that holds the cgroup's CPU time. */
const CPU_FILE = { 1: PRESENCE_FILES[1][0], 2: PRESENCE_FILES[2][0] } as const;

/** What the reader needs to know of a container to find its cgroup. */
export interface CgroupOwner {
  id: string;
  /** Its init process (0 or less: none, it is not running). */
  pid: number;
  /** HostConfig.CgroupParent as Docker holds it. */
  cgroupParent: string;
}

/** Which containers run, and word of those that stop, restart or go: the state cache. */
interface ContainerRuns {
  isRunning(id: string): boolean;
  /** The state cache's `listen`: word of each run that ended. */
  listen(listener: { runEnded(id: string): void }): () => void;
}

interface CgroupReaderOptions {
  driver: CgroupDriver;
  log: Logger;
  procRoot?: string;
  /**
   * Files are held only for containers this says run, and closed when it says one stopped,
   * restarted or went: a removed cgroup whose file is held open stays pinned in the kernel, and
   * waiting for the next read of the container (which never comes once it is removed) let
   * descriptors pile up. A read that comes after the word (a storage pass with a list from
   * before it) reads once. Without it, files are held until forgotten.
   */
  runs?: ContainerRuns;
  /** Files held open at most (kernel-files.ts's heldFilesCap of the descriptor limit). */
  maxHeldFiles?: number;
}

/** The container an owner's files belong to: owners are a container's ID, or "<ID>/<part>" (its pod's cgroup). */
function containerOf(owner: string): string {
  const slash = owner.indexOf('/');
  return slash === -1 ? owner : owner.slice(0, slash);
}

export class CgroupReader {
  private mountTable: CgroupMount[] | undefined;
  /** Each container's directories, for the process they were found from. */
  private readonly known = new Map<string, { pid: number; dirs: CgroupDirs | undefined }>();
  private readonly files: KernelFiles;
  /** "<file name> <code>" pairs logged already: a broken file would otherwise log on every call. */
  private readonly logged = new Set<string>();
  readonly procRoot: string;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: CgroupReaderOptions) {
    this.procRoot = options.procRoot ?? '/proc';
    this.unsubscribe = options.runs?.listen({ runEnded: (id) => this.forget(id) }) ?? (() => undefined);
    this.files = new KernelFiles((file, err) => {
      const key = `${path.basename(file)} ${err.code ?? ''}`;
      if (this.logged.has(key)) return;
      this.logged.add(key);
      options.log.debug({ file, err: err.message }, 'cgroups: cannot read a file; its figures are left out');
    }, options.maxHeldFiles);
  }

  /** Descriptors held open. */
  get heldFiles(): number {
    return this.files.count;
  }

  /** The cgroup hierarchies mounted here; read once. */
  mounts(): readonly CgroupMount[] {
    this.mountTable ??= parseMountInfo(this.readProc('self/mountinfo') ?? '');
    return this.mountTable;
  }

  /**
   * The container's cgroup directories: from /proc/<pid>/cgroup of its process, else (the
   * process is not visible here, or the PID now belongs to another process) from Docker's
   * naming. Worked out once per process; a new PID (a restart) is looked up afresh and the
   * files held for the old one are closed, as its cgroup may be a new directory at the same path.
   */
  dirsOf(c: CgroupOwner): CgroupDirs | undefined {
    if (!(c.pid > 0)) return undefined;
    const known = this.known.get(c.id);
    if (known?.pid === c.pid) return known.dirs;
    if (known) this.files.release(c.id);
    const mounts = this.mounts();
    const text = this.readProc(`${c.pid}/cgroup`);
    const entries = text === undefined ? [] : parseProcCgroup(text);
    // Both drivers name the container's cgroup after its ID; anything else means the PID was
    // reused by another process after the container's own exited.
    const fromProcess = entries.some((e) => e.path.includes(c.id)) ? dirsFromProcCgroup(entries, mounts) : undefined;
    const dirs = fromProcess ?? dirsFromCgroupPath(cgroupPathFor(this.options.driver, c.cgroupParent, c.id), mounts);
    this.known.set(c.id, { pid: c.pid, dirs });
    return dirs;
  }

  /**
   * `names` in the cgroup `dirs`, kept open for `owner` (none: opened for this read alone);
   * undefined when the cgroup is gone (none of its presence files reads), in which case nothing
   * else is read. A file missing from a cgroup that is there is one this host lacks, and is not
   * looked for again.
   */
  read(dirs: CgroupDirs, names: readonly string[], owner: string | undefined): CgroupFiles | undefined {
    const out: Record<string, string | undefined> = {};
    let present = false;
    const holder = this.holder(owner);
    for (const name of PRESENCE_FILES[dirs.version]) {
      const text = this.files.optional(dirOfFile(dirs, name), name, holder);
      out[name] = text;
      present ||= text !== undefined;
    }
    if (!present) return undefined;
    for (const name of names) if (!(name in out)) out[name] = this.files.hostFile(dirOfFile(dirs, name), name, holder);
    return out;
  }

  /** Who a file read for `owner` is kept open for: nobody once its container is known not to run. */
  private holder(owner: string | undefined): string | undefined {
    const runs = this.options.runs;
    return owner === undefined || !runs || runs.isRunning(containerOf(owner)) ? owner : undefined;
  }

  /**
   * The CPU time the container's processes have used so far (ns), from its cgroup's CPU file
   * alone (the storage passes ask it of every running container), kept open for it; undefined
   * when it does not run or its cgroup is gone.
   */
  cpuUsage(c: CgroupOwner): bigint | undefined {
    const dirs = this.dirsOf(c);
    if (!dirs) return undefined;
    const name = CPU_FILE[dirs.version];
    const text = this.files.optional(dirOfFile(dirs, name), name, this.holder(c.id));
    return text === undefined ? undefined : cpuUsageNs({ [name]: text }, dirs.version);
  }

  /** The PIDs in the cgroup (its cgroup.procs, kept open for `owner`). */
  pids(dirs: CgroupDirs, owner: string): number[] | undefined {
    const text = this.files.optional(procsDirOf(dirs), 'cgroup.procs', this.holder(owner));
    return text === undefined ? undefined : parsePids(text);
  }

  /**
   * /proc/<pid>/net/dev: the interfaces of the process's network namespace. Opened per call,
   * never kept: an open file in /proc/<pid>/net keeps the namespace (and a stopped pod's veth
   * and address in it) alive until the descriptor is closed.
   */
  netDev(pid: number): string | undefined {
    return this.readProc(`${pid}/net/dev`);
  }

  /** A file under /proc, read once (not kept open). */
  readProc(rel: string): string | undefined {
    return this.files.read(path.join(this.procRoot, rel));
  }

  /** Closes the files kept for `owner`. */
  release(owner: string): void {
    this.files.release(owner);
  }

  /** Forgets the container's directories and closes its files, and its pod's ("<ID>/<part>" owners). */
  forget(id: string): void {
    this.known.delete(id);
    this.files.release(id);
    for (const owner of [...this.files.owners()]) if (owner.length > id.length && containerOf(owner) === id) this.files.release(owner);
  }

  /** Forgets every container but `ids`, and closes the files of the others' owners. */
  keepOnly(ids: ReadonlySet<string>): void {
    for (const id of this.known.keys()) if (!ids.has(id)) this.known.delete(id);
    for (const owner of [...this.files.owners()]) if (!ids.has(containerOf(owner))) this.files.release(owner);
  }

  /** Closes every file kept open (at shutdown). */
  close(): void {
    this.unsubscribe();
    this.known.clear();
    this.files.closeAll();
  }
}
