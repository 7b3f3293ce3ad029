// --runtime-cgroups, as cri-dockerd's container manager does it: the Docker daemon's processes
// (dockerd and containerd, ./docker-daemon.ts) are put in the named cgroup, which is limited to
// 70% of the machine's memory (at least 150 MiB), and given oom_score_adj -999; this is checked
// again every 5 minutes, so a restarted daemon is put back. The shim does not move itself.
//
// Nothing here is fatal: a controller that cannot be written, a process that cannot be moved,
// a score the kernel refuses (lowering one needs CAP_SYS_RESOURCE) are warnings naming what
// failed, and a directory the shim made but could not put a process in is removed again.
//
// v1: every hierarchy mounted under the cgroup root (each controller's, name=systemd's) gets the
// cgroup; a new cpuset cgroup has no CPUs or memory nodes, and takes no process until they are
// copied from its parent (ENOSPC otherwise), as runc does. v2: the unified hierarchy; the
// memory controller is enabled in the ancestors' cgroup.subtree_control as needed. A hybrid
// host is treated as v1 (its unified tree has no controllers).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { normalCgroupPath } from '../config/flags';
import { InvalidArgumentError } from '../errors';
import type { Logger } from '../util/logger';
import { GivenDaemonFinder, ProcDaemonFinder, type DaemonFinder, type DaemonProcess } from './docker-daemon';
import { dirUnder, parseMountInfo, parseProcCgroup, usesV1, type CgroupMount, type ProcCgroupEntry } from './paths';

const DEFAULT_CGROUP_ROOT = '/sys/fs/cgroup';
/** kubelet's DockerMemoryLimitThresholdPercent: Docker's leaks (kubernetes#9881) are bounded. */
const MEMORY_LIMIT_PERCENT = 70;
export const MIN_MEMORY_LIMIT_BYTES = 150 * 1024 * 1024;
/** The OOM killer takes nearly anything before the daemon. */
const DOCKER_OOM_SCORE_ADJ = -999;
/** cri-dockerd's period: a daemon restarted by its service manager is put back within it. */
const RECHECK_INTERVAL_MS = 5 * 60_000;

/** The cgroup hierarchies the daemon is placed in. */
export type RuntimeCgroupLayout = { version: 1; hierarchies: CgroupMount[] } | { version: 2; unified: CgroupMount };

/** 70% of MemTotal in /proc/meminfo's text, at least 150 MiB (also when it cannot be read). */
export function memoryLimitFor(meminfo: string | undefined): number {
  const m = /MemTotal:\s*(\d+) kB/.exec(meminfo ?? '');
  const limit = m ? Math.floor((Number(m[1]) * 1024 * MEMORY_LIMIT_PERCENT) / 100) : 0;
  return Math.max(limit, MIN_MEMORY_LIMIT_BYTES);
}

/**
 * The hierarchies mounted under `root` (the mount table's text), by the layout the readers
 * detect: v1 when a v1 memory or cpuacct hierarchy is there, else the unified one, else any
 * v1 hierarchies (named ones only). A hierarchy mounted twice counts once.
 */
export function layoutUnder(mountinfo: string, root: string): RuntimeCgroupLayout | undefined {
  const top = root.replace(/\/+$/, '') || '/';
  const mounts = parseMountInfo(mountinfo).filter((m) => m.mountPoint === top || m.mountPoint.startsWith(`${top}/`));
  const v1 = mounts.filter((m) => m.version === 1 && m.controllers.length > 0);
  const unified = mounts.find((m) => m.version === 2);
  if (!usesV1(mounts) && unified) return { version: 2, unified };
  const seen = new Set<string>();
  const hierarchies = v1.filter((m) => {
    const key = [...m.controllers].sort().join(',');
    return !seen.has(key) && seen.add(key);
  });
  return hierarchies.length > 0 ? { version: 1, hierarchies } : undefined;
}

interface PlacementReport {
  /** Each process moved, with the directory (v1: one per hierarchy) it was written into. */
  moved: Array<{ pid: number; dir: string }>;
  /** Processes whose oom_score_adj is now -999 (written, or found so). */
  scored: number[];
  warnings: string[];
  /** Directories made in this pass and removed again, as no process could be put in them. */
  removed: string[];
}

interface PlacerOptions {
  /** The cgroup, as --runtime-cgroups names it (absolute, within each hierarchy). */
  cgroup: string;
  layout: RuntimeCgroupLayout;
  memoryLimitBytes: number;
  procRoot?: string;
}

/** One hierarchy's part of a placement: where the cgroup is, and how it is named in warnings. */
interface Target {
  mount: CgroupMount;
  label: string;
  dir: string | undefined;
}

/** Puts processes in the cgroup and scores them; one pass per call, no state between passes. */
export class RuntimeCgroupPlacer {
  private readonly cgroup: string;
  private readonly procRoot: string;

  constructor(private readonly opts: PlacerOptions) {
    const cgroup = normalCgroupPath(opts.cgroup);
    if (cgroup === undefined) throw new InvalidArgumentError(`--runtime-cgroups: ${JSON.stringify(opts.cgroup)} must be an absolute cgroup path without . or ..`);
    this.cgroup = cgroup;
    this.procRoot = opts.procRoot ?? '/proc';
  }

  place(processes: readonly DaemonProcess[]): PlacementReport {
    const report: PlacementReport = { moved: [], scored: [], warnings: [], removed: [] };
    const { layout } = this.opts;
    const targets: Target[] =
      layout.version === 2
        ? [{ mount: layout.unified, label: 'the unified hierarchy', dir: dirUnder(layout.unified, this.cgroup) }]
        : layout.hierarchies.map((mount) => ({ mount, label: `the ${mount.controllers.join(',')} hierarchy`, dir: dirUnder(mount, this.cgroup) }));
    if (layout.version === 1 && !layout.hierarchies.some((m) => m.controllers.includes('memory'))) {
      report.warnings.push(`no memory controller among the cgroup hierarchies; ${this.cgroup} gets no memory limit (${this.opts.memoryLimitBytes} bytes)`);
    }
    // Each process's /proc/<pid>/cgroup once a pass: one read tells every hierarchy.
    const cgroups = new Map(processes.map((p) => [p.pid, this.procCgroup(p.pid)]));
    for (const target of targets) this.placeIn(target, processes, cgroups, report);
    for (const p of processes) setOomScore(p, this.procRoot, report);
    return report;
  }

  private placeIn(target: Target, processes: readonly DaemonProcess[], cgroups: ReadonlyMap<number, ProcCgroupEntry[] | undefined>, report: PlacementReport): void {
    const { mount, label, dir } = target;
    if (dir === undefined) {
      report.warnings.push(`${label} is mounted at ${mount.mountPoint} showing only ${mount.root}, not ${this.cgroup}`);
      return;
    }
    const away = processes.filter((p) => {
      const now = pathIn(cgroups.get(p.pid), mount);
      return now !== undefined && now !== this.cgroup;
    });
    if (away.length === 0) return;
    let created: string[];
    try {
      created = makeLevels(mount.mountPoint, dir);
    } catch (err) {
      report.warnings.push(`cannot make ${dir} in ${label}: ${reason(err)}`);
      return;
    }
    if (mount.controllers.includes('cpuset')) this.fillCpuset(mount.mountPoint, dir, label, report);
    if (mount.version === 2) this.enableMemoryV2(mount.mountPoint, dir, report);
    if (mount.controllers.includes('memory')) this.limitMemory(dir, 'memory.limit_in_bytes', label, report);
    let used = false;
    for (const p of away) {
      try {
        fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(p.pid));
        // The kernel takes an exiting process's PID without moving it: the cgroup's list tells.
        if (readOr(path.join(dir, 'cgroup.procs')).split('\n').includes(String(p.pid))) {
          report.moved.push({ pid: p.pid, dir });
          used = true;
        } else {
          report.warnings.push(`${p.name} (PID ${p.pid}) is not in ${dir} (${label}) after being written there: it is exiting or gone`);
        }
      } catch (err) {
        report.warnings.push(`cannot move ${p.name} (PID ${p.pid}) into ${dir} (${label}): ${reason(err)}`);
      }
    }
    if (!used) report.removed.push(...removeLevels(created));
  }

  /** The process's /proc/<pid>/cgroup; undefined when it is gone. */
  private procCgroup(pid: number): ProcCgroupEntry[] | undefined {
    try {
      return parseProcCgroup(fs.readFileSync(`${this.procRoot}/${pid}/cgroup`, 'utf8'));
    } catch {
      return undefined;
    }
  }

  /** Each level below the mount whose cpuset.cpus or cpuset.mems is empty takes its parent's. */
  private fillCpuset(mountPoint: string, dir: string, label: string, report: PlacementReport): void {
    for (const level of levelsBelow(mountPoint, dir)) {
      for (const file of ['cpuset.cpus', 'cpuset.mems']) {
        try {
          if (readOr(path.join(level, file)).trim() !== '') continue;
          fs.writeFileSync(path.join(level, file), fs.readFileSync(path.join(path.dirname(level), file), 'utf8').trim());
        } catch (err) {
          report.warnings.push(`cannot copy ${file} into ${level} (${label}) from its parent: ${reason(err)}`);
          return;
        }
      }
    }
  }

  /** v2: "+memory" in the subtree_control of every level above `dir` that lacks it. */
  private enableMemoryV2(mountPoint: string, dir: string, report: PlacementReport): void {
    let available: string;
    try {
      available = fs.readFileSync(path.join(mountPoint, 'cgroup.controllers'), 'utf8');
    } catch (err) {
      report.warnings.push(`cannot read ${path.join(mountPoint, 'cgroup.controllers')}: ${reason(err)}; ${this.cgroup} gets no memory limit`);
      return;
    }
    if (!available.split(/\s+/).includes('memory')) {
      report.warnings.push(`the unified hierarchy at ${mountPoint} has no memory controller; ${this.cgroup} gets no memory limit (${this.opts.memoryLimitBytes} bytes)`);
      return;
    }
    for (const level of [mountPoint, ...levelsBelow(mountPoint, dir).slice(0, -1)]) {
      const file = path.join(level, 'cgroup.subtree_control');
      try {
        if (fs.readFileSync(file, 'utf8').split(/\s+/).includes('memory')) continue;
        fs.writeFileSync(file, '+memory');
      } catch (err) {
        report.warnings.push(`cannot enable the memory controller in ${file}: ${reason(err)}; ${this.cgroup} gets no memory limit`);
        return;
      }
    }
    this.limitMemory(dir, 'memory.max', 'the unified hierarchy', report);
  }

  private limitMemory(dir: string, file: string, label: string, report: PlacementReport): void {
    try {
      fs.writeFileSync(path.join(dir, file), String(this.opts.memoryLimitBytes));
    } catch (err) {
      report.warnings.push(`cannot set ${file} of ${dir} (${label}) to ${this.opts.memoryLimitBytes}: ${reason(err)}`);
    }
  }
}

/** oom_score_adj -999, written unless it is so already. */
function setOomScore(p: DaemonProcess, procRoot: string, report: PlacementReport): void {
  const file = `${procRoot}/${p.pid}/oom_score_adj`;
  try {
    if (fs.readFileSync(file, 'utf8').trim() !== String(DOCKER_OOM_SCORE_ADJ)) fs.writeFileSync(file, String(DOCKER_OOM_SCORE_ADJ));
    report.scored.push(p.pid);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'EACCES' || code === 'EPERM' ? ' (lowering a score needs CAP_SYS_RESOURCE)' : '';
    report.warnings.push(`cannot set oom_score_adj ${DOCKER_OOM_SCORE_ADJ} of ${p.name} (PID ${p.pid}): ${reason(err)}${why}`);
  }
}

/** The process's cgroup in the hierarchy of `mount`; undefined when it shows none there. */
function pathIn(entries: readonly ProcCgroupEntry[] | undefined, mount: CgroupMount): string | undefined {
  const entry = mount.version === 2 ? entries?.find((e) => e.controllers.length === 0) : entries?.find((e) => e.controllers.includes(mount.controllers[0]!));
  return entry?.path;
}

/** The directories from just below `mountPoint` down to `dir`, top first. */
function levelsBelow(mountPoint: string, dir: string): string[] {
  const rel = path.relative(mountPoint, dir);
  if (rel === '') return [];
  const parts = rel.split(path.sep);
  return parts.map((_p, i) => path.join(mountPoint, ...parts.slice(0, i + 1)));
}

/** Makes the missing levels of `dir`, top first; returns those it made. */
function makeLevels(mountPoint: string, dir: string): string[] {
  const made: string[] = [];
  try {
    for (const level of levelsBelow(mountPoint, dir)) {
      try {
        fs.mkdirSync(level);
        made.push(level);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
  } catch (err) {
    removeLevels(made);
    throw err;
  }
  return made;
}

/** Removes what makeLevels made, deepest first; returns what it removed. */
function removeLevels(made: readonly string[]): string[] {
  const removed: string[] = [];
  for (const level of [...made].reverse()) {
    try {
      fs.rmdirSync(level);
      removed.push(level);
    } catch {
      // Something else put a process or a cgroup in it meanwhile: it is in use, so it stays.
    }
  }
  return removed;
}

function reason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ?? e.message;
}

interface RuntimeCgroupsOptions {
  cgroup: string;
  log: Logger;
  /** Where the hierarchies are mounted (--test-only-runtime-cgroups-root for tests). */
  root?: string;
  /** The daemon's processes as given (--test-only-docker-daemon-pids), instead of found in /proc. */
  daemonPids?: readonly number[];
  procRoot?: string;
  intervalMs?: number;
}

/**
 * The re-check: a pass at start(), then one every RECHECK_INTERVAL_MS on an unref'd timer (a
 * pass costs a few reads of /proc, see ./docker-daemon.ts). A warning is logged the first time
 * it is met, and at debug level when it repeats, so a node that cannot be changed is told once.
 */
export class RuntimeCgroups {
  private timer: NodeJS.Timeout | undefined;
  private readonly warned = new Set<string>();

  constructor(
    private readonly placer: RuntimeCgroupPlacer | undefined,
    private readonly finder: DaemonFinder,
    private readonly log: Logger,
    private readonly intervalMs = RECHECK_INTERVAL_MS,
    /** Why there is no placer (no cgroup hierarchy found): warned about at each pass, once. */
    private readonly noPlacer = '',
    private readonly procRoot = '/proc',
  ) {}

  static create(opts: RuntimeCgroupsOptions): RuntimeCgroups {
    const procRoot = opts.procRoot ?? '/proc';
    const root = opts.root ?? DEFAULT_CGROUP_ROOT;
    const finder = opts.daemonPids ? new GivenDaemonFinder(opts.daemonPids) : new ProcDaemonFinder(procRoot);
    const layout = layoutUnder(readOr(`${procRoot}/self/mountinfo`), root);
    const placer = layout && new RuntimeCgroupPlacer({ cgroup: opts.cgroup, layout, memoryLimitBytes: memoryLimitFor(readOr(`${procRoot}/meminfo`)), procRoot });
    const why = layout ? '' : `no cgroup hierarchy is mounted under ${root}; only the OOM score is set`;
    return new RuntimeCgroups(placer, finder, opts.log, opts.intervalMs, why, procRoot);
  }

  start(): void {
    this.check();
    this.timer = setInterval(() => this.check(), this.intervalMs);
    this.timer.unref();
  }

  /** One pass; what it did is also logged. */
  check(): PlacementReport {
    const search = this.finder.find();
    let report: PlacementReport;
    if (this.placer) {
      report = this.placer.place(search.processes);
    } else {
      report = { moved: [], scored: [], warnings: [this.noPlacer], removed: [] };
      for (const p of search.processes) setOomScore(p, this.procRoot, report);
    }
    for (const warning of [...search.problems, ...report.warnings]) {
      if (this.warned.has(warning)) this.log.debug(`--runtime-cgroups: ${warning}`);
      else this.log.warn(`--runtime-cgroups: ${warning}`);
      this.warned.add(warning);
    }
    if (report.moved.length > 0) this.log.info({ moved: report.moved }, '--runtime-cgroups: moved the Docker daemon into its cgroup');
    if (report.removed.length > 0) this.log.info({ removed: report.removed }, '--runtime-cgroups: removed the cgroup directories it could not use');
    return report;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

function readOr(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
