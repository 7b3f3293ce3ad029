// Loaded into a shim under test through NODE_OPTIONS (./census.ts's censusEnv): counts every
// callback the process runs between two SIGUSR2s, by the kind of resource that woke it (a timer,
// a socket, a file read...) and the line of the shim that made that resource; the second SIGUSR2
// writes them to $RUN_CENSUS_FILE as JSON and turns the hook off, so what follows (the bench's
// bursts) runs at full speed. It names what ran in the window: an idle shim should run nothing on
// a timer (issue 44). A timer run counts as timer-driven when no outside wake-up (a socket, a
// pipe, a file, a signal: any resource that is not a timer, tick or promise) stands close behind
// it: a timeout armed at start-up, a second run of an interval, or the fourth timeout or later of
// a chain re-armed from timers' own callbacks with no I/O in between (a polling loop, however it
// began). A debounce armed by a Docker event, and the timeouts its callback arms, up to three in
// all, are that event's, whenever it came: on a shared node other shims' containers change all
// the time.
// Tests and the bench only: the shim itself carries no census.
import { createHook } from 'node:async_hooks';
import * as fs from 'node:fs';
import type { CensusEntry } from './census';

/** Resource types whose callbacks a timer runs. */
const TIMER_TYPES = new Set(['Timeout', 'Immediate']);
/**
 * Timeouts in a row with no outside wake-up between them, from which on a chain is a loop. The
 * shim's deepest bounded chain is three: a Docker event's debounce (the storage pass), the heap
 * trim's look that the pass's end arms, and that look's re-look once its cooldown is over.
 */
const LOOP_HOPS = 3;
/** Resource types that only carry on what another callback began; the rest wake on I/O or a signal. */
const CONTINUATIONS = new Set([...TIMER_TYPES, 'PROMISE', 'TickObject', 'Microtask']);

interface Made {
  type: string;
  site: string;
  /** Timeouts between the last outside wake-up and this resource's making; Infinity: none before it (start-up). */
  hops: number;
  ranBefore: boolean;
}

/** The first frame of the stack that is the program's own (not Node's, not this file's). */
function madeAt(): string {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 30;
  const frames = (new Error().stack ?? '').split('\n').slice(1);
  Error.stackTraceLimit = limit;
  const own = frames.find((f) => !f.includes('node:') && !f.includes('run-census') && !f.includes('(<anonymous>)'));
  return (own ?? frames[frames.length - 1] ?? '?').trim().replace(/^at /, '');
}

const made = new Map<number, Made>();
let runs = new Map<string, CensusEntry>();
let counting = false;
/**
 * The running macrotask's distance from an outside wake-up, in timeouts. Promise and tick
 * callbacks run inside the macrotask that settled them, whatever made them (an async iterator's
 * promise is made by its loop and settled by the socket), so only I/O and timers set it.
 */
let hopsNow = Infinity;

const hook = createHook({
  init(asyncId, type) {
    // A promise wakes nothing by itself: what settled it did.
    if (type !== 'PROMISE') made.set(asyncId, { type, site: madeAt(), hops: hopsNow, ranBefore: false });
  },
  before(asyncId) {
    const resource = made.get(asyncId);
    if (!resource) return;
    const repeat = resource.ranBefore;
    resource.ranBefore = true;
    if (resource.type === 'Timeout') hopsNow = repeat ? Infinity : resource.hops + 1;
    else if (resource.type === 'Immediate') hopsNow = resource.hops;
    else if (!CONTINUATIONS.has(resource.type)) hopsNow = 0;
    if (!counting || resource.type === 'SIGNALWRAP') return;
    // An immediate carries on the macrotask that made it (a GC observer's report, a deferred
    // write): only a timeout is a wake-up of its own.
    const timer = resource.type === 'Timeout' && (repeat || resource.hops >= LOOP_HOPS);
    const key = `${resource.type} ${resource.site} ${timer}`;
    const entry = runs.get(key) ?? { type: resource.type, site: resource.site, timer, runs: 0 };
    entry.runs++;
    runs.set(key, entry);
  },
  destroy(asyncId) {
    made.delete(asyncId);
  },
});
hook.enable();

process.on('SIGUSR2', () => {
  if (!counting) {
    runs = new Map();
    counting = true;
    return;
  }
  counting = false;
  hook.disable();
  made.clear();
  const file = process.env.RUN_CENSUS_FILE;
  if (!file) return;
  // Whole or not at all: the bench polls for the file.
  fs.writeFileSync(`${file}.part`, JSON.stringify([...runs.values()].sort((a, b) => b.runs - a.runs)));
  fs.renameSync(`${file}.part`, file);
});
