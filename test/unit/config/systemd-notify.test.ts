import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { readyArguments } from '../../../src/config/systemd-notify';

describe('systemd readiness', () => {
  it('is sent only when systemd asked for it, in the name of the shim itself, without waiting on systemd', () => {
    assert.equal(readyArguments({}, 42), undefined);
    assert.equal(readyArguments({ NOTIFY_SOCKET: '' }, 42), undefined);
    assert.deepEqual(readyArguments({ NOTIFY_SOCKET: '/run/systemd/notify' }, 42), ['--pid=42', '--no-block', '--ready', 'STATUS=serving CRI']);
  });
});
