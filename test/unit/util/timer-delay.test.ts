// The waits a request asks for (int64 seconds) as a timer can hold them: refused when negative
// or malformed, clamped when longer than a timer holds (a longer delay fires after 1 ms).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from '../../../src/errors';
import {
  MAX_REQUEST_TIMEOUT_MS,
  MAX_REQUESTED_WAIT_SECONDS,
  MAX_TIMER_DELAY_MS,
  requestedWaitSeconds,
  timerDelayMs,
} from '../../../src/util/timer-delay';

describe('requestedWaitSeconds', () => {
  it('keeps an ordinary wait, and reads an empty field as 0', () => {
    assert.equal(requestedWaitSeconds('timeout', '30'), 30);
    assert.equal(requestedWaitSeconds('timeout', '0'), 0);
    assert.equal(requestedWaitSeconds('timeout', ''), 0);
  });

  it('clamps a wait of years, up to int64’s largest, to MAX_REQUESTED_WAIT_SECONDS', () => {
    assert.equal(MAX_REQUESTED_WAIT_SECONDS, 2_061_083);
    for (const text of ['907189589', '2147484', '4294968', '9223372036854775807', String(MAX_REQUESTED_WAIT_SECONDS + 1)]) {
      assert.equal(requestedWaitSeconds('timeout', text), MAX_REQUESTED_WAIT_SECONDS, text);
    }
    assert.equal(requestedWaitSeconds('timeout', String(MAX_REQUESTED_WAIT_SECONDS)), MAX_REQUESTED_WAIT_SECONDS);
  });

  it('leaves room for the request timeout on top within one timer', () => {
    assert.ok(MAX_REQUESTED_WAIT_SECONDS * 1000 + MAX_REQUEST_TIMEOUT_MS <= MAX_TIMER_DELAY_MS);
  });

  it('refuses a negative or malformed wait, naming the field', () => {
    for (const text of ['-1', '-9223372036854775808', '1.5', 'x', '1e9']) {
      assert.throws(
        () => requestedWaitSeconds('timeout', text),
        (err: unknown) => err instanceof InvalidArgumentError && /^timeout: .* must be a number of seconds, 0 or more$/.test(err.message),
        text,
      );
    }
  });
});

describe('timerDelayMs', () => {
  it('keeps a delay a timer holds and cuts a longer one to 2^31-1 ms', () => {
    assert.equal(timerDelayMs(120_000), 120_000);
    assert.equal(timerDelayMs(-5), 0);
    assert.equal(timerDelayMs(907_189_589_000), 2 ** 31 - 1);
  });
});
