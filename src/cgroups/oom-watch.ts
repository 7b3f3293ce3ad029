// OOM kills as cgroup v2 counts them: the memory.events file of a container's cgroup has an
// oom_kill counter, and the kernel notifies whoever watches the file (inotify) each time one of
// its counters moves, which is what containerd's OOM monitor relies on on v2. The cgroup goes
// with the container (Docker deletes it before its `die` event), so the counter can only be
// read while the container runs: each running container's file is followed from the moment the
// shim sees it run until the state cache shows it stopped or gone (the kernel tells a watcher
// nothing when a cgroup is removed), and a kill is remembered for that run (its StartedAt), beside Docker's flag,
// its `oom` event and the kernel's log (see src/app.ts). v1 notifies only through an eventfd
// registered in cgroup.event_control, which Node cannot make; there the other witnesses remain.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ContainerInspect } from '../docker/types';
import { parseFlatKeyed } from './parse';
import type { CgroupReader } from './reader';

/** Calls `onChange` whenever the kernel says the file changed; throws when it cannot be watched. */
type KernelFileWatcher = (file: string, onChange: () => void) => { close(): void };

/** fs.watch (inotify) on one file; it never keeps the process alive, and a failing watch just ends. */
export const watchKernelFile: KernelFileWatcher = (file, onChange) => {
  const watcher = fs.watch(file, { persistent: false }, () => onChange());
  watcher.on('error', () => watcher.close());
  return watcher;
};

const OOM_KILL = new Set(['oom_kill']);

/** memory.events' oom_kill: processes of the cgroup (and its descendants) the OOM killer ended. */
export function oomKillsOf(memoryEvents: string): bigint | undefined {
  return parseFlatKeyed(memoryEvents, OOM_KILL).get('oom_kill');
}

/** Containers followed at once at most (one inotify watch each); past it a run is not followed. */
const MAX_FOLLOWED = 4096;
/** Runs remembered as OOM-killed at most (the oldest are forgotten first). */
const REMEMBERED = 10_000;

/** What the watch follows runs from: the state cache (../docker-cache/state-cache.ts), structurally. */
export interface RunSource {
  readonly synced: boolean;
  readonly containers: { values(): Iterable<ContainerInspect> };
  /** A watch (it has `unsynced`): refused (throws) while unsynced; an unsynced cache tells each watcher once and drops it. */
  listen(watch: { containerChanged(change: { id: string; after: ContainerInspect | undefined }): void; unsynced(reason: string): void }): () => void;
}

/** How often a watch that lost the cache looks whether it is synced again. */
export const RESYNC_LOOK_MS = 1_000;

interface Followed {
  startedAt: string;
  file: string;
  watch: { close(): void };
}

export class CgroupOomWatch {
  private readonly followed = new Map<string, Followed>();
  /** The run (StartedAt) in which each container had an OOM kill. */
  private readonly killed = new Map<string, string>();
  private unwatch: (() => void) | undefined;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly reader: Pick<CgroupReader, 'dirsOf'>,
    private readonly watchFile: KernelFileWatcher = watchKernelFile,
    private readonly limit = MAX_FOLLOWED,
  ) {}

  /** Containers whose memory.events is followed now. */
  get size(): number {
    return this.followed.size;
  }

  /**
   * The container's document as the state cache holds it now (undefined: removed): a running
   * one on cgroup v2 is followed for its run, any other is let go.
   */
  observe(id: string, doc: ContainerInspect | undefined): void {
    const running = doc?.State.Running === true && doc.State.Pid > 0;
    const dirs = running ? this.reader.dirsOf({ id, pid: doc.State.Pid, cgroupParent: doc.HostConfig.CgroupParent ?? '' }) : undefined;
    if (doc && dirs?.version === 2) this.follow(id, doc.State.StartedAt, dirs.dir);
    else this.unfollow(id);
  }

  /** Whether the cgroup counted an OOM kill during the container's run that started at `startedAt`. */
  oomKilledIn(id: string, startedAt: string): boolean {
    return this.killed.get(id) === startedAt;
  }

  /**
   * Follows the runs `source` holds and every change it applies, for as long as it is synced;
   * after it loses Docker, looks each RESYNC_LOOK_MS whether it is synced again, then starts
   * over from what it holds (a run missed meanwhile is looked at then, if it still runs).
   */
  followRuns(source: RunSource): void {
    if (this.closed) return;
    if (source.synced) {
      try {
        this.unwatch = source.listen({
          containerChanged: (change) => this.observe(change.id, change.after),
          unsynced: () => this.lookAgain(source),
        });
        const held = new Set<string>();
        for (const doc of source.containers.values()) {
          held.add(doc.Id);
          this.observe(doc.Id, doc);
        }
        // Removed while the cache was away from Docker.
        for (const id of [...this.followed.keys()]) if (!held.has(id)) this.unfollow(id);
        return;
      } catch {
        // unsynced between the look and the watch: look again
      }
    }
    this.lookAgain(source);
  }

  /** Stops following every container (at shutdown). */
  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    this.unwatch?.();
    for (const f of this.followed.values()) f.watch.close();
    this.followed.clear();
  }

  private lookAgain(source: RunSource): void {
    this.unwatch = undefined;
    if (this.closed) return;
    this.retry = setTimeout(() => this.followRuns(source), RESYNC_LOOK_MS);
    this.retry.unref();
  }

  private follow(id: string, startedAt: string, dir: string): void {
    const known = this.followed.get(id);
    if (known?.startedAt === startedAt) return;
    if (known) this.unfollow(id);
    if (this.followed.size >= this.limit) return;
    const file = path.join(dir, 'memory.events');
    let watch: Followed['watch'];
    try {
      watch = this.watchFile(file, () => this.check(id));
    } catch {
      return; // no memory controller in the cgroup, or the cgroup went meanwhile
    }
    this.followed.set(id, { startedAt, file, watch });
    // A kill before the watch began is counted too: the cgroup is this run's own.
    this.check(id);
  }

  /** Lets the container go, after a last look (its cgroup is most likely gone already). */
  private unfollow(id: string): void {
    if (!this.followed.has(id)) return;
    this.check(id);
    const f = this.followed.get(id);
    if (!f) return;
    f.watch.close();
    this.followed.delete(id);
  }

  private check(id: string): void {
    const f = this.followed.get(id);
    if (!f) return;
    let text: string;
    try {
      text = fs.readFileSync(f.file, 'utf8');
    } catch {
      // Gone with its container: nothing more to learn from it.
      f.watch.close();
      this.followed.delete(id);
      return;
    }
    if ((oomKillsOf(text) ?? 0n) > 0n) this.remember(id, f.startedAt);
  }

  private remember(id: string, startedAt: string): void {
    this.killed.delete(id);
    this.killed.set(id, startedAt);
    if (this.killed.size > REMEMBERED) this.killed.delete(this.killed.keys().next().value!);
  }
}
