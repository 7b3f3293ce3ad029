// Every connection the Docker client opens comes from this pool, so that no burst of Docker
// calls can take the process's descriptors: a flood of resize messages once started 43,690
// calls at once, each on a connection of its own (Node's global agent has no cap), until every
// other open failed with EMFILE. Three parts with caps of their own, so that connections held
// for a whole session can never starve the short calls (Status's ping among them), and users'
// sessions never the kubelet's:
// - calls: requests bounded by the request deadline. Kept alive (a call on a kept connection
//   spares the connect) and at most `calls` open; more wait their turn in order, their deadline
//   running, and leave the queue at once when it passes or their caller gives up.
// - sessions: the kubelet's and the shim's own long connections: ExecSync's exec (hijacked,
//   which Node's agent stops counting once upgraded, so they are counted here until their
//   socket closes), log and event streams, pulls and imports, and stops that wait out a grace
//   period. At most `sessions` open; more wait for one to close.
// - streams: users' exec and attach through the streaming server (hijacked, counted the same
//   way), held as long as the user likes. At most `streams` open. The streaming server's
//   node-wide session cap is this same number (app.ts), so a session past it is refused with
//   429 at its upgrade instead of waiting here; and however many users hold, the sessions'
//   part stays whole for probes, stops and pulls (a flood of held `kubectl exec`s once left
//   ExecSync, StopContainer and PullImage waiting for a connection until their deadline).
// All caps derive from the descriptor limit, together a small part of it (dockerSocketCaps).
import * as http from 'node:http';
import * as net from 'node:net';
import { inspect } from 'node:util';
import { Slots } from '../util/slots';
import { HijackedConnection } from './hijack';

export interface DockerSocketCaps {
  /** Connections open at once for calls bounded by the request deadline. */
  calls: number;
  /** Connections open at once for the kubelet's and the shim's sessions, streams and waits. */
  sessions: number;
  /** Connections open at once for users' streaming sessions (exec, attach); also the streaming server's node-wide session cap. */
  streams: number;
}

/**
 * The caps' ceilings. Calls gain little past a few dozen at once (2,000 inspects asked at once on
 * two busy cores: 3.9 s through 16 connections, 3.7 s through 64, 3.5 s through 256, 3.8 s through
 * 2,000); the sessions' ceiling is well above the log streams of a node's containers plus its
 * probes in flight; the streams' holds a full node's users: kubelet's default 110 pods at the
 * streaming server's 32 sessions each is 3,520.
 */
const MAX_CALL_SOCKETS = 256;
const MAX_SESSION_SOCKETS = 1024;
export const MAX_STREAM_SOCKETS = 4096;
/** Below this a limit leaves the shim too few descriptors to run anyway; the caps stay usable. */
const MIN_SOCKETS = 8;
/** Kept connections idle at once: enough for the periodic callers' bursts, few descriptors. */
export const KEPT_IDLE_SOCKETS = 8;
/**
 * A kept connection idle this long is closed by the shim, before any server would: dockerd keeps
 * idle connections forever, but a proxy in front of it may not (Node's servers close after 5 s),
 * and a request written to a connection the server is closing fails.
 */
export const IDLE_SOCKET_MS = 4_000;

/**
 * The caps for a process whose descriptor limit is `openFilesLimit`: a sixteenth of it for calls,
 * an eighth for sessions, a sixteenth for streams, each within [MIN_SOCKETS, its ceiling]. A
 * held stream costs about two descriptors (its client's socket too), so the three take at most
 * 5/16 of the limit: at the unit's 1,048,576, 256 + 1,024 + 4,096 (under 1 %); at 65,536, the
 * same (14 %); at Linux's default soft 1,024, 64 + 128 + 64. Pure.
 */
export function dockerSocketCaps(openFilesLimit: number): DockerSocketCaps {
  const share = (divisor: number, ceiling: number): number => Math.max(MIN_SOCKETS, Math.min(ceiling, Math.floor(openFilesLimit / divisor)));
  return { calls: share(16, MAX_CALL_SOCKETS), sessions: share(8, MAX_SESSION_SOCKETS), streams: share(16, MAX_STREAM_SOCKETS) };
}

/** Which part a connection comes from. */
export type SocketUse = 'call' | 'session' | 'stream';

interface SocketPoolUsage {
  calls: { inUse: number; waiting: number };
  sessions: { inUse: number; waiting: number };
  streams: { inUse: number; waiting: number };
}

/**
 * An agent that prints as its name and caps. docker-modem (the streams' transport) formats each
 * request's options with util.inspect (showHidden, no depth limit) for its debug log, whether that
 * log is on or not, and the options hold the agent: inspected whole (its sockets, their parsers,
 * the queued requests) it made every call cost milliseconds more, and a queue of n waiting calls
 * n times that.
 */
class DockerAgent extends http.Agent {
  constructor(
    private readonly label: string,
    options: http.AgentOptions,
  ) {
    super(options);
  }

  [inspect.custom](): string {
    return `DockerAgent(${this.label}, at most ${this.maxSockets})`;
  }
}

export class DockerSocketPool {
  /** Kept-alive connections for calls; `calls` at most, idle ones included. */
  readonly callAgent: http.Agent;
  /** A connection per session, closed with it. Streams are all hijacked, on connections of their own (./hijack.ts). */
  readonly sessionAgent: http.Agent;
  private readonly slots: Record<SocketUse, Slots>;

  constructor(readonly caps: DockerSocketCaps) {
    // The agents' own caps are a second guard: the slots below let no more requests through.
    this.callAgent = new DockerAgent('calls', {
      keepAlive: true,
      maxSockets: caps.calls,
      maxTotalSockets: caps.calls,
      maxFreeSockets: Math.min(KEPT_IDLE_SOCKETS, caps.calls),
      timeout: IDLE_SOCKET_MS,
      scheduling: 'lifo',
    });
    this.sessionAgent = new DockerAgent('sessions', { keepAlive: false, maxSockets: caps.sessions, maxTotalSockets: caps.sessions });
    this.slots = { call: new Slots(caps.calls), session: new Slots(caps.sessions), stream: new Slots(caps.streams) };
  }

  agentFor(use: SocketUse): http.Agent {
    return use === 'call' ? this.callAgent : this.sessionAgent;
  }

  /**
   * Waits for room for one connection of `use`; answers its release. Rejects with the signal's
   * reason if it aborts first (a call queued past its deadline holds nothing). `ahead`: waits
   * ahead of the others (the liveness ping: a burst of calls queued here is not Docker being
   * silent, and must not make the node's runtime not ready).
   */
  take(use: SocketUse, signal?: AbortSignal, ahead = false): Promise<() => void> {
    return this.slots[use].acquire(signal, ahead);
  }

  /**
   * Releases `release` once the connection under `stream` (an upgraded socket or a streamed
   * response) has closed: until then its descriptor is open.
   */
  releaseWhenClosed(stream: object, release: () => void): void {
    const socket = connectionOf(stream);
    const target = socket ?? (stream as NodeJS.EventEmitter & { closed?: boolean });
    if (target.closed === true) return release();
    target.once('close', release);
  }

  usage(): SocketPoolUsage {
    const of = (s: Slots): { inUse: number; waiting: number } => ({ inUse: s.inUse, waiting: s.waiting });
    return { calls: of(this.slots.call), sessions: of(this.slots.session), streams: of(this.slots.stream) };
  }

  /** Closes the kept connections (shutdown). */
  close(): void {
    this.callAgent.destroy();
    this.sessionAgent.destroy();
  }
}

/** The socket a stream the modem answered runs on. */
function connectionOf(stream: object): net.Socket | undefined {
  if (stream instanceof net.Socket) return stream;
  if (stream instanceof HijackedConnection) return stream.socket;
  if (stream instanceof http.IncomingMessage) return stream.socket;
  // docker-modem's HttpDuplex: a hijack with stdin that Docker answered without upgrading.
  const response = (stream as { _output?: unknown })._output;
  return response instanceof http.IncomingMessage ? response.socket : undefined;
}
