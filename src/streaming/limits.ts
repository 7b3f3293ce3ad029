// The bounds on what a streaming client can make the shim hold or run. kubelet passes the bytes
// of anyone allowed pods/exec, pods/attach or pods/portforward through unchanged, so each bound
// holds against a client that ignores the protocol's own (README, "Security", lists them all).
import { MAX_STREAM_SOCKETS } from '../docker/socket-pool';

export interface StreamingLimits {
  /** Sessions open at once to one pod: exec and attach to any of its containers and port forwards to it, together. */
  sessionsPerPod: number;
  /**
   * Sessions open at once on the node, all pods together: the Docker connections users' exec
   * and attach may hold (the streams' budget, docker/socket-pool.ts), which the shim sets it to,
   * so that a session Docker could not serve at once is refused at its upgrade instead of
   * waiting for a connection. Each session also holds its client's socket.
   */
  sessions: number;
  /** Port-forward connections open at once to one pod, all its sessions together. */
  portForwardConnectionsPerPod: number;
  /** Streams one port-forward session may have open at once (two per connection, halves waiting for their pair included). */
  portForwardStreamsPerSession: number;
  /** A session that sends and receives nothing for this long is closed; 0 never. */
  idleTimeoutMs: number;
  /** The largest WebSocket message a client may send. */
  webSocketMaxMessageBytes: number;
}

export const DEFAULT_STREAMING_LIMITS: Readonly<StreamingLimits> = {
  sessionsPerPod: 32,
  // The streams' budget at the unit's LimitNOFILE (packaging/systemd), 4,096: 110 pods (kubelet's
  // default maxPods) at 32 each, 3,520, fit; under 10,000 descriptors (1.8 to 2.3 per exec
  // session measured). Under a lower limit the shim sets the smaller budget (app.ts).
  sessions: MAX_STREAM_SOCKETS,
  portForwardConnectionsPerPod: 128,
  portForwardStreamsPerSession: 128,
  // kubelet's own default (--streaming-connection-idle-timeout), and cri-dockerd's.
  idleTimeoutMs: 4 * 60 * 60 * 1000,
  webSocketMaxMessageBytes: 1024 * 1024,
};

/** Exec and attach use at most five streams: error, stdin, stdout, stderr, resize. */
export const MAX_STDIO_STREAMS = 5;

/**
 * Ports one port-forward WebSocket of kubelet's channel protocol may name (and at most half the
 * session's streams, two channels a port): its channels 0-79 stay one ASCII character in the
 * base64 variant.
 */
export const MAX_WEBSOCKET_PORTS = 40;

/** Bytes a stream may hold that its reader has not taken yet: SPDY's initial window. */
export const STREAM_BUFFER_BYTES = 64 * 1024;

/**
 * Reads of a client's SPDY connection lent at once (into reused 64 KiB buffers, spdy/session.ts):
 * past it the connection is not read until one is given back.
 */
export const CLIENT_LENT_READS = 8;

/**
 * The client's input (stdin, port-forward data) written toward Docker or the pod and not taken
 * yet: past it the client's stream is not read (batched-pipe.ts).
 */
export const PIPE_BUFFER_BYTES = 64 * 1024;

/**
 * A write of output completes at once while the connection holds less than this unsent (so the
 * next chunk is read while this one goes out), and once it drains otherwise.
 */
export const SEND_BUFFER_BYTES = 256 * 1024;

/** Output queued on a connection and not yet sent; past it the connection is not read (a client that pings and never reads). */
export const MAX_UNSENT_BYTES = 1024 * 1024;

/** While a connection is not read, a ping this often finds out whether its client is still there. */
export const PAUSED_PROBE_MS = 30_000;

/**
 * Places for sessions or connections, counted per pod (its sandbox ID) and on the node.
 * `take` answers a release function, or why there is no place.
 */
export class Slots {
  private readonly byKey = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly perPod: number,
    /** Infinity: no node-wide bound. */
    private readonly overall: number,
    /** What is counted, for the refusal: "streaming sessions", "port-forward connections". */
    private readonly what: string,
  ) {}

  /** A place for one more to the pod whose sandbox ID is `sandboxId`. */
  take(sandboxId: string): (() => void) | string {
    const held = this.byKey.get(sandboxId) ?? 0;
    if (held >= this.perPod) return `too many ${this.what} to pod sandbox ${sandboxId} (at most ${this.perPod} at once)`;
    if (this.total >= this.overall) return `too many ${this.what} on this node (at most ${this.overall} at once)`;
    this.byKey.set(sandboxId, held + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.byKey.get(sandboxId) ?? 1) - 1;
      if (left > 0) this.byKey.set(sandboxId, left);
      else this.byKey.delete(sandboxId);
    };
  }

  held(sandboxId: string): number {
    return this.byKey.get(sandboxId) ?? 0;
  }
}

/**
 * Calls `onIdle` once nothing was `touch`ed for `ms` (0: never). Touching only records the time:
 * the timer is re-armed when it fires, not on every frame.
 */
export class IdleTimer {
  private last = Date.now();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {
    if (ms > 0) this.arm(ms);
  }

  touch(): void {
    this.last = Date.now();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(delay: number): void {
    this.timer = setTimeout(() => {
      const idle = Date.now() - this.last;
      if (idle >= this.ms) {
        this.timer = undefined;
        this.onIdle();
      } else this.arm(this.ms - idle);
    }, delay);
    this.timer.unref();
  }
}

/**
 * Replies to a client's pings (SPDY PING, WebSocket ping) a connection sends at most, a second;
 * the rest are not answered (SPDY/3 section 2.6.5 and RFC 6455 section 5.5.3 let a peer
 * answer only some). Kubernetes clients ping every few seconds; a flood of them cost a write a
 * ping and stalled every CRI call (a SPDY PING flood on 8 connections: 1.6 s a call).
 */
export const PING_REPLIES_PER_SECOND = 10;

/**
 * WebSocket pings a connection may send, regained at WEBSOCKET_PINGS_PER_SECOND; past them it
 * is terminated. `ws` handles every frame of a read at once (up to some 10,000 pings in 64 KiB)
 * and reads on, so unlike a SPDY session's frames their work cannot be spread over turns; 8
 * connections flooding pings, each answered or not, stalled every CRI call for 0.5 to 2 s.
 */
export const MAX_WEBSOCKET_PINGS = 1024;
export const WEBSOCKET_PINGS_PER_SECOND = 64;

/**
 * What one connection's frames may cost a turn of the event loop: past this many, the rest wait
 * for the next turn (setImmediate, so that the CRI server's work comes between) and the
 * connection is not read meanwhile.
 */
export const FRAMES_PER_TURN = 1024;

/**
 * A budget of `burst` events regained at `perSecond` (a token bucket): `take` says whether one
 * more fits now. The clock is read only once the budget is spent, so an event costs O(1).
 */
export class RateBudget {
  private left: number;
  private since = performance.now();

  constructor(
    private readonly perSecond: number,
    private readonly burst = perSecond,
  ) {
    this.left = burst;
  }

  /** Takes `n` events (all or none). */
  take(n = 1): boolean {
    if (this.left < n) {
      const now = performance.now();
      this.left = Math.min(this.burst, this.left + ((now - this.since) * this.perSecond) / 1000);
      this.since = now;
      if (this.left < n) return false;
    }
    this.left -= n;
    return true;
  }
}
