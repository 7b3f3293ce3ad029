// Gives the garbage of a burst back to the node. V8 collects its old generation only once it
// grows to a limit that it raises as the heap grows, so after a burst (a start-up from the
// container snapshot, the stats and metrics of hundreds of containers) tens of MiB of garbage
// stay in the heap, resident, until the next burst. Measured at 1,000 containers: 155 MiB
// resident in a quiet shim after start-up and 190 after the stats and metrics calls, 93 and
// 100 after one full collection (the live heap is ~30 MiB).
//
// So the resident size is looked at CHECK_MS after activity (a call answered, a stream closed,
// and the work a change leads to on timers of its own, a storage pass or the container snapshot's
// save: `activity()`; one read of /proc/self/stat), and once it is above both the floor and what the
// last collection left plus SLACK_BYTES (or above the floor alone, when the calls stopped: no
// activity came while the look waited), and the last one is COOLDOWN_MS past, one full collection
// runs: ~20-40 ms at this size, so at most ~1 ms per second whatever happens. A look the cooldown
// held back looks again once it is over; activity that comes while a look waits arms the look
// after it, CHECK_MS later, so that a look follows the last activity (armed by that activity,
// never by a look's own callback: nothing here polls). A collection that
// gave back the slack or more ran in a burst, and what it left is no measure of the live heap: the
// burst's tail was still live (ExecSync's answers, up to 16 MiB each, until grpc-js has written
// them). So the first look past the cooldown collects above the floor as a quiet one does, if
// anything happened since (else the last collection's result stands: an idle shim after a burst
// paid ~55 ms for a second one that gave nothing back); that look is armed by what happened, as
// every look is, never by the collection itself. And so on while collections give back as much:
// with calls still coming (kubelet's
// pollers) no look is quiet, and 20 ExecSyncs of 20 MB left up to 117 MiB of their answers that
// no look collected, the RSS never the slack above what the collection in the burst had left.
// An idle shim (no call, no stream) looks at nothing once that is done: no timer is armed until
// the next activity. The walk of Docker's image store (src/storage: on a fresh root directory
// minutes of directory reads at a quarter of a core, 155,000 entries at 50 pods on the bench's
// store) ends with no call or pass behind it, so its end was no activity and no look followed
// it: what it left (V8's heap committed 34-60 MiB while it ran, 22-23 after each collection of
// this trim, its young generation grown; --trace-gc, 2026-12-02) stayed for V8's memory reducer
// to give back (a collection or two on V8's own timer, ~8 s after a mark-compact, ~45 ms), ~18
// MiB of an idle shim's 100 at 50 pods. Its end is looked at at once, as a quiet look
// (`workEnded()`): within that work rather than CHECK_MS into the quiet after it. The collection
// is asked through the in-process inspector session (HeapProfiler.collectGarbage): exposing gc()
// needs a V8 flag, which would also make V8 refuse the bundle's code cache at start-up. A Node
// built without the inspector trims nothing.
//
// That collection is already V8's memory-reducing one: HeapProfiler.collectGarbage is V8's
// LowMemoryNotification (CollectAllAvailableGarbage: several full collections, the young
// generation shrunk to one page, start-up-only bytecode flushed). Measured in Node 20: a grown
// young generation 32 -> 1 MiB after it; 2,000 functions run once, their bytecode 871 -> 132 KiB
// after the first one and no less after seven more. In an idle shim at 50 pods, seven more
// collections after the first (~35 ms of CPU each) left the RSS (68.6 -> 68.5 MiB), the
// compiled code (3.66 -> 3.65 MiB) and the bytecode (1.16 MiB) as they were: one per burst is
// all there is to gain. Node's inspector has no Memory domain
// (Memory.simulatePressureNotification: "wasn't found"). gc() exposed at run time instead
// (v8.setFlagsFromString('--expose-gc'), gc from a new vm context) spares ~0.7 MiB of the
// inspector's code pages but keeps that context alive (+1.2 MiB anonymous): no gain.
import * as v8 from 'node:v8';
import type { Logger } from './logger';

export const CHECK_MS = 5_000;
const COOLDOWN_MS = 30_000;
/** Below this nothing is worth a collection (an idle shim with no pod sits near 60 MiB). */
const FLOOR_BYTES = 64 * 1024 * 1024;
/** Garbage a collection must be able to give back to be worth its pause. */
const SLACK_BYTES = 16 * 1024 * 1024;

interface HeapTrimOptions {
  log: Logger;
  /** The process's resident size in bytes. */
  residentBytes?: () => number;
  /** Runs one full collection; undefined: none available. */
  collect?: (() => Promise<void>) | undefined;
  now?: () => number;
  floorBytes?: number;
  slackBytes?: number;
  cooldownMs?: number;
}

export class HeapTrim {
  private timer: NodeJS.Timeout | undefined;
  /** When the armed look is due. */
  private dueAtMs = 0;
  /**
   * The look after it, armed by the first activity that came while it waited (calls go on), due
   * CHECK_MS after it: armed by that activity, not by the look's own callback, so that no look
   * is ever re-armed by a timer alone.
   */
  private next: { timer: NodeJS.Timeout; dueAtMs: number } | undefined;
  private started = false;
  private checkMs = CHECK_MS;
  /** Activity came since the last collection. */
  private activeSinceCollection = false;
  private lastAtMs = -Infinity;
  /** What the last collection left resident (none yet: nothing). */
  private leftBytes = 0;
  /** The last collection gave back the slack or more: one more look follows the cooldown. */
  private followUp = false;
  private running = false;
  private readonly residentBytes: () => number;
  private readonly collect: (() => Promise<void>) | undefined;
  private readonly now: () => number;
  private collected = 0;

  constructor(private readonly opts: HeapTrimOptions) {
    this.residentBytes = opts.residentBytes ?? (() => process.memoryUsage.rss());
    this.collect = 'collect' in opts ? opts.collect : inspectorCollector(opts.log);
    this.now = opts.now ?? Date.now;
  }

  /** Collections run so far. */
  get collections(): number {
    return this.collected;
  }

  /** Whether a look is armed. */
  get armed(): boolean {
    return this.timer !== undefined;
  }

  /**
   * From now on activity arms a look `afterMs` later; one is armed now, for start-up's garbage.
   * V8's own memory reducer (a collection or two 8 s after a mark-compact, on V8's timer) is left
   * on. Most of what it gave back was the image store walk's (workEnded now collects that). Its
   * off switch, --memory-reducer-gc-count=0 set at run time (--no-memory-reducer is read only as
   * the heap is set up), must come before any GC cycle starts, or a V8 check ends the process,
   * and its gain was not measured on a quiet node (2026-12-02).
   */
  start(afterMs = CHECK_MS): void {
    if (!this.collect) return;
    this.started = true;
    this.checkMs = afterMs;
    this.activity();
  }

  stop(): void {
    this.started = false;
    clearTimeout(this.timer);
    clearTimeout(this.next?.timer);
    this.timer = undefined;
    this.next = undefined;
  }

  /**
   * Something happened that may have left garbage: one look CHECK_MS from now, unless one is
   * armed; while one is armed, the look after it. Cheap enough for every call.
   */
  activity(): void {
    this.activeSinceCollection = true;
    if (!this.started) return;
    if (!this.timer) this.lookIn(this.checkMs);
    else if (!this.next) {
      const dueAtMs = this.dueAtMs + this.checkMs;
      this.next = { timer: this.armLook(dueAtMs - this.now()), dueAtMs };
    }
  }

  /**
   * Work of the shim's own that ran long with no call behind it ended (the walk of Docker's image
   * store): what it made is garbage now, and nothing of it waits to be written, so it is looked at
   * at once, as a quiet look (above the floor, if anything happened since the last collection),
   * within the shim's burst of work rather than CHECK_MS into the quiet after it.
   */
  workEnded(): void {
    this.activeSinceCollection = true;
    if (this.started) void this.check(true);
  }

  private lookIn(ms: number): void {
    this.dueAtMs = this.now() + ms;
    this.timer = this.armLook(ms);
  }

  /** A look `ms` from now: the one after it (if activity armed one) takes its place, and this one is quiet without one. */
  private armLook(ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      if (timer !== this.timer) return;
      const next = this.next;
      this.next = undefined;
      this.timer = next?.timer;
      if (next) this.dueAtMs = next.dueAtMs;
      void this.check(next === undefined);
    }, Math.max(0, ms));
    timer.unref();
    return timer;
  }

  /**
   * One look: collects if the resident size asks for it. Resolves once done. `quiet`: no activity
   * came while the look waited (the calls stopped), when what the burst left above the floor is
   * collected even under the slack: once per burst, never while calls keep coming (kubelet's
   * pollers call every second).
   */
  async check(quiet = false): Promise<void> {
    if (!this.collect || this.running) return;
    const cooldownMs = this.opts.cooldownMs ?? COOLDOWN_MS;
    const sinceLast = this.now() - this.lastAtMs;
    const before = this.residentBytes();
    const aboveFloor = before >= (this.opts.floorBytes ?? FLOOR_BYTES);
    // The follow-up, like a quiet look, collects only if something happened since the last
    // collection (answers written, streams closed, calls): otherwise that one's result stands.
    const worth = this.worthCollecting(before) || (aboveFloor && this.activeSinceCollection && (this.followUp || quiet));
    if (sinceLast < cooldownMs) {
      // Worth a collection once the cooldown is over: looked at again then, activity or not
      // (with calls still coming, the look they armed comes first and sees the same).
      if (this.started && !this.timer && worth) this.lookIn(cooldownMs - sinceLast);
      return;
    }
    // Past the cooldown: the follow-up, if one was due, is this look.
    this.followUp = false;
    if (!worth) return;
    this.running = true;
    this.activeSinceCollection = false;
    try {
      await this.collect();
      this.collected++;
      this.leftBytes = this.residentBytes();
      this.followUp = before - this.leftBytes >= (this.opts.slackBytes ?? SLACK_BYTES);
      this.opts.log.debug({ residentMiB: mib(before), afterMiB: mib(this.leftBytes), ...heapFigures() }, 'heap collected after a burst');
    } catch (err) {
      this.opts.log.debug({ err: (err as Error).message }, 'heap collection failed');
    } finally {
      this.lastAtMs = this.now();
      this.running = false;
    }
  }

  private worthCollecting(residentBytes: number): boolean {
    return residentBytes >= Math.max(this.opts.floorBytes ?? FLOOR_BYTES, this.leftBytes + (this.opts.slackBytes ?? SLACK_BYTES));
  }
}

function mib(bytes: number): number {
  return Math.round(bytes / 2 ** 20);
}

/** What V8's heap holds after a collection, in MiB to a tenth: the compiled code and bytecode are what start-up leaves. */
function heapFigures(): Record<'heapTotalMiB' | 'heapUsedMiB' | 'externalMiB' | 'codeMiB' | 'bytecodeMiB', number> {
  const { heapTotal, heapUsed, external } = process.memoryUsage();
  const code = v8.getHeapCodeStatistics();
  const tenths = (bytes: number): number => Math.round((bytes * 10) / 2 ** 20) / 10;
  return {
    heapTotalMiB: tenths(heapTotal),
    heapUsedMiB: tenths(heapUsed),
    externalMiB: tenths(external),
    codeMiB: tenths(code.code_and_metadata_size),
    bytecodeMiB: tenths(code.bytecode_and_metadata_size),
  };
}

/** A full collection through an in-process inspector session (connected on first use); undefined when Node has no inspector. */
export function inspectorCollector(log?: Logger): (() => Promise<void>) | undefined {
  let inspector: typeof import('node:inspector');
  try {
    inspector = require('node:inspector') as typeof import('node:inspector');
  } catch {
    log?.debug('no inspector in this Node: the heap is left to V8 alone');
    return undefined;
  }
  let session: import('node:inspector').Session | undefined;
  return () =>
    new Promise<void>((resolve, reject) => {
      if (!session) {
        session = new inspector.Session();
        session.connect();
      }
      session.post('HeapProfiler.collectGarbage', (err) => (err ? reject(err) : resolve()));
    });
}
