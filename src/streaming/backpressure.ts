// Flow control of one client connection, the same for SPDY sessions (spdy/session.ts) and
// WebSocket links (ws-channels.ts):
// - Reading: the connection is read only while no hold stands (a reason: a stream whose reader
//   has no room, frames waiting, our own output piling up unsent). While it is not read, a ping
//   every PAUSED_PROBE_MS notices a client that has gone: unanswered, but writing it makes the
//   connection fail once the client is not there.
// - Writing: a write completes at once while less than SEND_BUFFER_BYTES is unsent, else once
//   it drains below that: the next chunk is read while this one goes out, and a client that stops
//   reading stops the writers.
// - Output over MAX_UNSENT_BYTES unsent (a client that pings and never reads what we answer)
//   holds reading until it drains back to the bound.
import type { EventEmitter } from 'node:events';
import { MAX_UNSENT_BYTES, PAUSED_PROBE_MS, SEND_BUFFER_BYTES } from './limits';

/** What the primitive drives on the connection. */
export interface FlowPeer {
  /** Emits 'drain' when its unsent output has gone out. */
  socket: EventEmitter;
  /** Bytes written to the client and not sent yet. */
  unsent(): number;
  pause(): void;
  resume(): void;
  /** Sends a ping (while reading is paused). */
  ping(): void;
}

/** The hold for our own output piling up unsent. */
const UNSENT = 'unsent';

type SendCallback = (err?: Error | null) => void;

/** Holds a connection's reading for reasons and paces its writers (see above). */
export class Backpressure {
  private readonly holds = new Set<string>();
  private probe: NodeJS.Timeout | undefined;
  private sendWaiters: SendCallback[] = [];
  private closedWith: Error | null | undefined;

  constructor(
    private readonly peer: FlowPeer,
    private readonly probeMs = PAUSED_PROBE_MS,
  ) {
    peer.socket.on('drain', () => {
      if (this.closedWith !== undefined) return;
      if (peer.unsent() < SEND_BUFFER_BYTES) for (const done of this.sendWaiters.splice(0)) done();
      this.update();
    });
  }

  /** Whether reading is held now. */
  get holding(): boolean {
    return this.holds.size > 0;
  }

  /** Stops reading the connection until every hold is released. */
  hold(reason: string): void {
    if (this.closedWith !== undefined || this.holds.has(reason)) return;
    this.holds.add(reason);
    if (this.holds.size > 1) return;
    this.peer.pause();
    this.probe = setInterval(() => this.peer.ping(), this.probeMs);
    this.probe.unref();
  }

  release(reason: string): void {
    if (!this.holds.delete(reason) || this.holds.size > 0) return;
    clearInterval(this.probe);
    this.probe = undefined;
    this.peer.resume();
  }

  /**
   * Holds for each of `reasons` that is true and releases the others, and holds while our output
   * over MAX_UNSENT_BYTES waits unsent (released once it drains back). Holds are taken before
   * releases, so that reading never resumes between them.
   */
  update(reasons?: Readonly<Record<string, boolean>>): void {
    const unsent = this.peer.unsent() > MAX_UNSENT_BYTES;
    if (unsent) this.hold(UNSENT);
    if (reasons) for (const reason in reasons) if (reasons[reason]) this.hold(reason);
    if (reasons) for (const reason in reasons) if (!reasons[reason]) this.release(reason);
    if (!unsent) this.release(UNSENT);
  }

  /** Calls `done` now if less than SEND_BUFFER_BYTES is unsent, else once it drains (or the connection closes). */
  whenSent(done: SendCallback): void {
    if (this.closedWith !== undefined) return done(this.closedWith);
    if (this.peer.unsent() < SEND_BUFFER_BYTES) return done();
    this.sendWaiters.push(done);
  }

  /**
   * The connection is closing: holds and the probe end (reading is left as it is: the caller
   * resumes it to see the client's close) and every writer waiting is called with `err`.
   */
  close(err: Error | null = null): void {
    if (this.closedWith !== undefined) return;
    this.closedWith = err;
    this.holds.clear();
    clearInterval(this.probe);
    this.probe = undefined;
    for (const done of this.sendWaiters.splice(0)) done(err);
  }
}
