// The shim's log followers, one per started container with a log path. Followers start with
// StartContainer and, after a shim restart, for every container whose output was not yet all
// written; they end when their container stops and are forgotten with RemoveContainer.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DockerClient } from '../docker/client';
import { errorMessage, FailedPreconditionError } from '../errors';
import type { Logger } from '../util/logger';
import { Slots } from '../util/slots';
import { LogFollower, NO_LOG_RECORDER, type LogRecorder } from './follower';
import { FollowerRecordStore, type FollowerRecord } from './follower-records';

/** Resumed followers finding their source at once. */
const RESUME_CONCURRENCY = 4;

export class ContainerLogManager {
  private readonly followers = new Map<string, LogFollower>();
  private readonly store: FollowerRecordStore;

  constructor(
    private readonly dockerDirect: DockerClient,
    private readonly log: Logger,
    rootDirectory: string,
    private readonly recorder: LogRecorder = NO_LOG_RECORDER,
    /** Docker's root directory, where json-file logs are read from ("" reads every log through Docker's API). */
    dockerRootDir = '',
    /**
     * Where followers read their container's inspect but the moment a log stream ended: the
     * state cache's client, whose documents cost no request (`runEnded` then tells a follower
     * of the exit the cache applied). Docker itself by default.
     */
    private readonly dockerCached: Pick<DockerClient, 'inspectContainer' | 'inspectImage'> = dockerDirect,
  ) {
    this.store = new FollowerRecordStore(rootDirectory);
    this.dockerRootDir = jsonLogRoot(dockerRootDir, log);
  }

  private readonly dockerRootDir: string;

  /**
   * Starts copying a started container's output to its CRI log at `logPath`, through `file`,
   * the log opened (see openContainerLog) before the container started; the follower owns it
   * from here. A container already followed keeps its follower, and `file` is closed.
   */
  async follow(containerId: string, logPath: string, tty: boolean, file: fs.promises.FileHandle): Promise<void> {
    if (this.followers.get(containerId)?.active) {
      await file.close();
      return;
    }
    const state = { logPath, tty, complete: false, checked: true };
    try {
      this.store.save(containerId, state);
    } catch (err) {
      await file.close();
      throw err;
    }
    this.start(containerId, state, file);
  }

  private start(containerId: string, state: FollowerRecord, file?: fs.promises.FileHandle, startSlots?: Slots): void {
    const follower = new LogFollower(
      { dockerDirect: this.dockerDirect, dockerCached: this.dockerCached, store: this.store, log: this.log, recorder: this.recorder, dockerRootDir: this.dockerRootDir, startSlots },
      containerId,
      state,
      file,
    );
    this.followers.set(containerId, follower);
    // A container removed without RemoveContainer (with its pod, say) leaves nothing behind.
    void follower.done.then(() => {
      if (follower.gone && this.followers.get(containerId) === follower) this.followers.delete(containerId);
    });
  }

  /**
   * Picks up every follower a previous run of the shim left unfinished. Each is in place at
   * once (for StartContainer, RemoveContainer and the rest), but they start a few at a time:
   * hundreds of inspects and log files at once held the event loop for half a second at 500
   * containers, and with it the answers to kubelet's first calls.
   */
  resumeAll(): number {
    let resumed = 0;
    const slots = new Slots(RESUME_CONCURRENCY);
    for (const id of this.store.list()) {
      const state = this.store.load(id);
      if (!state || state.complete || this.followers.has(id)) continue;
      this.start(id, state, undefined, slots);
      resumed++;
    }
    return resumed;
  }

  /**
   * Waits until everything a stopped container printed is in its file (the follower ends when
   * it has read Docker's log to its end after the exit), or the time is up.
   */
  async drained(containerId: string, timeoutMs: number): Promise<boolean> {
    const follower = this.followers.get(containerId);
    if (!follower || !follower.active) return true;
    follower.nudge();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([follower.done.then(() => true as const), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The state cache saw the container's run end (it stopped, or went): its follower looks at
   * once whether the container still runs, and finishes its log if not. A json-file follower
   * also looks when Docker rewrites the container's files, but the cache's document may not
   * show the exit yet then.
   */
  runEnded(containerId: string): void {
    const follower = this.followers.get(containerId);
    if (follower?.active) follower.nudge();
  }

  /** How many running followers read each source (for tests and debugging). */
  sources(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const f of this.followers.values()) if (f.active && f.source) counts[f.source] = (counts[f.source] ?? 0) + 1;
    return counts;
  }

  async reopen(containerId: string): Promise<void> {
    const follower = this.followers.get(containerId);
    if (!follower || !follower.active) {
      throw new FailedPreconditionError(`container ${containerId} has no log being written (no log path, or it is not running)`);
    }
    await follower.reopen();
  }

  /** Ends the container's follower and drops its state (the container is being removed). */
  async forget(containerId: string): Promise<void> {
    const follower = this.followers.get(containerId);
    this.followers.delete(containerId);
    await follower?.stop();
    await this.store.remove(containerId);
  }

  /** Stops every follower, keeping their state for the next start. */
  async close(): Promise<void> {
    const all = [...this.followers.values()];
    this.followers.clear();
    await Promise.all(all.map((f) => f.stop()));
  }
}

/**
 * `dockerRootDir` when its containers' folders can be read here, else "" (every log through
 * Docker's API): a shim in a container without Docker's root mounted (compose's `shim`
 * service mounts it read-only) would otherwise wait for files it can never see.
 */
export function jsonLogRoot(dockerRootDir: string, log: Logger): string {
  if (dockerRootDir === '') return '';
  const containers = path.join(dockerRootDir, 'containers');
  try {
    fs.accessSync(containers, fs.constants.R_OK | fs.constants.X_OK);
    return dockerRootDir;
  } catch (err) {
    log.warn({ dir: containers, err: errorMessage(err) }, "Docker's containers folder cannot be read here; container logs are read through Docker's log API");
    return '';
  }
}
