// Node's timers hold a delay as a signed 32-bit count of milliseconds: setTimeout (and so
// AbortSignal.timeout up to 2^32-1 ms) fires a longer delay after 1 ms instead, and
// AbortSignal.timeout past 2^32-1 ms throws RangeError. A wait a request asks for (a stop's
// grace period, an exec's timeout, in int64 seconds) is clamped here before any timer sees it:
// a wait of weeks is a wait of weeks, as containerd treats it, never one of 1 ms or a crash.
import { InvalidArgumentError } from '../errors';
import { quote } from './quote';

/** The longest delay a Node timer honours: 2^31-1 ms, 24d 20h 31m 23.647s. */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * The longest --runtime-request-timeout: a day, so that a Docker call that waits on purpose
 * (a stop's grace period) keeps the request timeout on top of its wait within one timer.
 */
export const MAX_REQUEST_TIMEOUT_MS = 24 * 3_600_000;

/** The longest wait a request gets (a longer one is clamped to it): 2,061,083 s, about 23.9 days. */
export const MAX_REQUESTED_WAIT_SECONDS = Math.floor((MAX_TIMER_DELAY_MS - MAX_REQUEST_TIMEOUT_MS) / 1000);

/**
 * A request's wait in int64 seconds (a decimal string, as the proto loader gives int64): a
 * negative or malformed one is refused naming `field`; one past MAX_REQUESTED_WAIT_SECONDS
 * (up to int64's 9,223,372,036,854,775,807) is clamped to it.
 */
export function requestedWaitSeconds(field: string, text: string): number {
  if (!/^\d*$/.test(text)) throw new InvalidArgumentError(`${field}: ${quote(text)} must be a number of seconds, 0 or more`);
  return Math.min(Number(text), MAX_REQUESTED_WAIT_SECONDS);
}

/** `ms` as a timer can take it: 0 to MAX_TIMER_DELAY_MS. */
export function timerDelayMs(ms: number): number {
  return Math.min(Math.max(0, ms), MAX_TIMER_DELAY_MS);
}
