// The flow control shared by SPDY sessions and WebSocket links: reading held while any reason
// stands, a ping every probe interval while held, writers paced by the unsent bytes, reading
// held while our own output over its bound waits unsent. Driven on a fake connection, with
// mocked timers for the probe.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { Backpressure, type FlowPeer } from '../../../src/streaming/backpressure';
import { MAX_UNSENT_BYTES, PAUSED_PROBE_MS, SEND_BUFFER_BYTES } from '../../../src/streaming/limits';

class FakePeer implements FlowPeer {
  readonly socket = new EventEmitter();
  bytes = 0;
  paused = false;
  pauses = 0;
  resumes = 0;
  pings = 0;
  unsent(): number {
    return this.bytes;
  }
  pause(): void {
    this.paused = true;
    this.pauses++;
  }
  resume(): void {
    this.paused = false;
    this.resumes++;
  }
  ping(): void {
    this.pings++;
  }
  /** The unsent output went down to `bytes`, and the socket says so. */
  drainTo(bytes: number): void {
    this.bytes = bytes;
    this.socket.emit('drain');
  }
}

describe('Backpressure', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setInterval'] }));
  afterEach(() => mock.timers.reset());

  it('holds reading while any reason stands and resumes once none does', () => {
    const peer = new FakePeer();
    const flow = new Backpressure(peer);
    flow.hold('stdin');
    flow.hold('stdin');
    flow.hold('port 1');
    assert.deepEqual([peer.paused, peer.pauses, flow.holding], [true, 1, true]);
    flow.release('stdin');
    flow.release('never held');
    assert.deepEqual([peer.paused, peer.resumes], [true, 0], 'still held for port 1');
    flow.release('port 1');
    assert.deepEqual([peer.paused, peer.resumes, flow.holding], [false, 1, false]);
  });

  it('pings every probe interval while reading is held, and not otherwise', () => {
    const peer = new FakePeer();
    const flow = new Backpressure(peer);
    mock.timers.tick(PAUSED_PROBE_MS * 2);
    assert.equal(peer.pings, 0, 'no ping while reading');
    flow.hold('stdin');
    mock.timers.tick(PAUSED_PROBE_MS - 1);
    assert.equal(peer.pings, 0);
    mock.timers.tick(1);
    assert.equal(peer.pings, 1);
    mock.timers.tick(PAUSED_PROBE_MS * 3);
    assert.equal(peer.pings, 4);
    flow.release('stdin');
    mock.timers.tick(PAUSED_PROBE_MS * 3);
    assert.equal(peer.pings, 4, 'no ping once reading resumed');

    const fast = new FakePeer();
    new Backpressure(fast, 50).hold('x');
    mock.timers.tick(500);
    assert.equal(fast.pings, 10, 'the probe interval given');
  });

  it('completes a write at once while less than SEND_BUFFER_BYTES is unsent, else once it drains below', () => {
    const peer = new FakePeer();
    const flow = new Backpressure(peer);
    const done: string[] = [];
    peer.bytes = SEND_BUFFER_BYTES - 1;
    flow.whenSent(() => done.push('room'));
    assert.deepEqual(done, ['room']);
    peer.bytes = SEND_BUFFER_BYTES;
    flow.whenSent(() => done.push('a'));
    flow.whenSent(() => done.push('b'));
    assert.deepEqual(done, ['room']);
    peer.drainTo(SEND_BUFFER_BYTES);
    assert.deepEqual(done, ['room'], 'drained, but not below the mark');
    peer.drainTo(0);
    assert.deepEqual(done, ['room', 'a', 'b']);
  });

  it('holds reading while its own output over MAX_UNSENT_BYTES waits unsent', () => {
    const peer = new FakePeer();
    const flow = new Backpressure(peer);
    peer.bytes = MAX_UNSENT_BYTES;
    flow.update();
    assert.equal(peer.paused, false, 'at the bound');
    peer.bytes = MAX_UNSENT_BYTES + 1;
    flow.update();
    assert.equal(peer.paused, true, 'over it');
    peer.drainTo(MAX_UNSENT_BYTES + 1);
    assert.equal(peer.paused, true);
    peer.drainTo(0);
    assert.deepEqual([peer.paused, peer.pauses, peer.resumes], [false, 1, 1]);
  });

  it('takes holds before releases, so reading never resumes between', () => {
    const peer = new FakePeer();
    const flow = new Backpressure(peer);
    flow.update({ 'full streams': true, 'queued frames': false });
    flow.update({ 'full streams': false, 'queued frames': true });
    assert.deepEqual([peer.paused, peer.pauses, peer.resumes], [true, 1, 0]);
    flow.update({ 'full streams': false, 'queued frames': false });
    assert.deepEqual([peer.paused, peer.resumes], [false, 1]);
  });

  it('on close, calls the waiting writers with its error, stops the probe and takes no more holds', () => {
    const peer = new FakePeer();
    const flow = new Backpressure(peer);
    const results: Array<string | null | undefined> = [];
    peer.bytes = SEND_BUFFER_BYTES;
    flow.whenSent((err) => results.push(err?.message));
    flow.hold('stdin');
    const gone = new Error('gone');
    flow.close(gone);
    assert.deepEqual([...results], ['gone']);
    flow.whenSent((err) => results.push(err?.message));
    assert.deepEqual([...results], ['gone', 'gone'], 'a write after close fails at once');
    mock.timers.tick(PAUSED_PROBE_MS * 2);
    assert.equal(peer.pings, 0);
    flow.hold('port 1');
    assert.equal(peer.pauses, 1, 'no hold once closed');
    peer.drainTo(0);
    assert.equal(results.length, 2);
  });
});
