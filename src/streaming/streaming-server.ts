// The streaming server: Exec, Attach and PortForward RPCs register a request here and hand the
// client a URL with a single-use token ({base}/exec/{token}, /attach/…, /portforward/…). The
// client then upgrades that URL to SPDY/3.1 or to a WebSocket, and the connection runs the
// request (port forward over WebSocket: ws-port-forward.ts). Unknown, expired or reused tokens
// get 404 and run nothing. Sessions are counted per pod (exec and attach to all its containers
// and port forwards to it together) and on the node, and refused past the bounds (limits.ts)
// with 429 and the reason.
import * as http from 'node:http';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { DockerClient } from '../docker/client';
import { errorMessage } from '../errors';
import { LentReadConnection } from '../util/lent-reads';
import type { Logger } from '../util/logger';
import { QuietHttpServer } from '../util/http-server';
import { CLIENT_LENT_READS, DEFAULT_STREAMING_LIMITS, MAX_STDIO_STREAMS, MAX_WEBSOCKET_PORTS, Slots, type StreamingLimits } from './limits';
import { PodRelays, startPodRelay } from './pod-relay';
import { dialDirect, servePortForward } from './port-forward-streams';
import {
  negotiate,
  PORTFORWARD_SPDY_PROTOCOLS,
  PORTFORWARD_TUNNEL_PROTOCOL,
  PORTFORWARD_WS_PROTOCOLS,
  PROTOCOL_HEADER,
  REMOTECOMMAND_SPDY_PROTOCOLS,
  REMOTECOMMAND_WS_PROTOCOLS,
} from './protocol';
import type { StreamRequest } from './requests';
import { runAttach, runExec } from './run-command';
import { SpdyServerSession, type SpdyLentReads } from './spdy/session';
import { waitForStdioStreams } from './spdy-channels';
import { DEFAULT_TOKEN_TTL_MS, redactToken, TokenCache } from './tokens';
import { wsChannels, type WsChannelOptions } from './ws-channels';
import { portsOfWebSocket, serveWsPortForward, WebSocketTunnel } from './ws-port-forward';
import type { StdioChannels } from './channels';

export type StreamKind = StreamRequest['kind'];

/** Told of tokens and sessions (for metrics). */
export interface StreamingRecorder {
  tokenIssued(kind: StreamKind): void;
  /** A URL of the route whose token was unknown, expired, used or for another kind. */
  tokenRejected(kind: StreamKind): void;
  sessionOpened(kind: StreamKind): void;
  sessionClosed(kind: StreamKind): void;
}

export const NO_STREAMING_RECORDER: StreamingRecorder = {
  tokenIssued: () => undefined,
  tokenRejected: () => undefined,
  sessionOpened: () => undefined,
  sessionClosed: () => undefined,
};

/** How long a client has to open its streams after the upgrade (kubelet's default too). */
const DEFAULT_STREAM_CREATION_TIMEOUT_MS = 30_000;

interface StreamingServerOptions {
  /** host:port; port 0 picks a free one. */
  bindAddress: string;
  /**
   * Docker itself, not a cache: port forward checks, after opening the pod's network namespace,
   * that the sandbox still runs as the process it opened it by.
   */
  docker: DockerClient;
  /** Where the single executable writes out its port relay (the shim's root directory). */
  rootDirectory?: string;
  log: Logger;
  tokenTtlMs?: number;
  streamCreationTimeoutMs?: number;
  recorder?: StreamingRecorder;
  /** Bounds other than the defaults (the node-wide cap: the Docker streams budget; tests: any). */
  limits?: Partial<StreamingLimits>;
  /** While a connection is not read, how often it is probed (tests). */
  pausedProbeMs?: number;
}

const ROUTE = /^\/(exec|attach|portforward)\/([^/?]+)(?:\?.*)?$/;

export class StreamingServer {
  private readonly server = new QuietHttpServer((req, res) => this.onPlainRequest(req, res), 'streaming');
  private readonly wss: WebSocketServer;
  /** The sub-protocol each WebSocket upgrade under way answers (see acceptWebSocket). */
  private readonly answeredProtocols = new WeakMap<http.IncomingMessage, string>();
  private readonly tokens: TokenCache<StreamRequest>;
  private readonly streamCreationTimeoutMs: number;
  private readonly recorder: StreamingRecorder;
  private readonly limits: StreamingLimits;
  private readonly sessions: Slots;
  private readonly connections: Slots;
  private readonly relays: PodRelays;
  private base = '';

  constructor(private readonly opts: StreamingServerOptions) {
    this.tokens = new TokenCache(opts.tokenTtlMs ?? DEFAULT_TOKEN_TTL_MS);
    this.streamCreationTimeoutMs = opts.streamCreationTimeoutMs ?? DEFAULT_STREAM_CREATION_TIMEOUT_MS;
    this.recorder = opts.recorder ?? NO_STREAMING_RECORDER;
    this.limits = { ...DEFAULT_STREAMING_LIMITS, ...opts.limits };
    this.sessions = new Slots(this.limits.sessionsPerPod, this.limits.sessions, 'streaming sessions');
    this.connections = new Slots(this.limits.portForwardConnectionsPerPod, Infinity, 'port-forward connections');
    this.relays = new PodRelays((sandboxId) => startPodRelay(opts.docker, sandboxId, opts.rootDirectory));
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.limits.webSocketMaxMessageBytes,
      // ws answers every ping with a write of its own (and terminates a connection with 60
      // unsent): pings are answered at a bounded rate, and floods ended, by answerPings
      // (ws-channels.ts).
      autoPong: false,
    });
    this.wss.on('headers', (headers: string[], req: http.IncomingMessage) => {
      const protocol = this.answeredProtocols.get(req);
      if (protocol) headers.push(`Sec-WebSocket-Protocol: ${protocol}`);
    });
    this.server.http.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(req, socket, head));
  }

  async listen(): Promise<void> {
    const bound = await this.server.listen(this.opts.bindAddress);
    const shownHost = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
    this.base = `http://${shownHost}:${bound.port}`;
  }

  /** e.g. http://127.0.0.1:41234 */
  get baseUrl(): string {
    return this.base;
  }

  /** Registers a checked request and returns the URL the client must open to run it. */
  urlFor(request: StreamRequest): string {
    const token = this.tokens.issue(request);
    this.recorder.tokenIssued(request.kind);
    return `${this.base}/${request.kind}/${token}`;
  }

  /** Tokens issued and neither used nor expired yet. */
  get pendingTokens(): number {
    return this.tokens.size;
  }

  /** Port-forward relays running (or starting), one per pod being forwarded to. */
  get podRelays(): number {
    return this.relays.size;
  }

  async close(): Promise<void> {
    this.relays.close();
    for (const client of this.wss.clients) client.terminate();
    await this.server.close();
    this.wss.close();
  }

  /** Finds the request a URL's token stands for, consuming the token. */
  private take(url: string | undefined): StreamRequest | undefined {
    const m = ROUTE.exec(url ?? '');
    if (!m) return undefined;
    const kind = m[1] as StreamKind;
    const request = this.tokens.consume(m[2]!);
    this.opts.log.debug({ kind, token: redactToken(m[2]!), found: request !== undefined }, 'streaming request');
    if (request?.kind === kind) return request;
    this.recorder.tokenRejected(kind);
    return undefined;
  }

  private onPlainRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const request = this.take(req.url);
    res.statusCode = request ? 400 : 404;
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.end(request ? 'this URL must be opened with an upgrade to SPDY/3.1 or WebSocket\n' : 'not found\n');
  }

  private onUpgrade(req: http.IncomingMessage, accepted: Duplex, head: Buffer): void {
    const upgrade = (req.headers.upgrade ?? '').toLowerCase();
    // A SPDY connection is read into reused buffers (lent reads: spdy/session.ts).
    const lent = upgrade === 'spdy/3.1' && accepted instanceof Socket ? LentReadConnection.take(accepted, CLIENT_LENT_READS) : undefined;
    const socket = lent?.socket ?? accepted;
    if (lent) this.server.track(socket);
    socket.on('error', () => undefined);
    const request = this.take(req.url);
    if (!request) return refuse(socket, 404, 'not found');
    const release = this.sessions.take(request.sandboxId);
    if (typeof release === 'string') {
      const containerId = request.kind === 'portforward' ? undefined : request.containerId;
      this.opts.log.info({ kind: request.kind, sandboxId: request.sandboxId, containerId }, `streaming session refused: ${release}`);
      return refuse(socket, 429, release);
    }
    socket.once('close', release);
    if (upgrade === 'websocket') return this.upgradeWebSocket(request, req, socket, head);
    if (upgrade === 'spdy/3.1') return this.upgradeSpdy(request, req, socket as Socket, head, lent);
    refuse(socket, 400, `unsupported upgrade ${JSON.stringify(req.headers.upgrade ?? '')}`);
  }

  private upgradeSpdy(request: StreamRequest, req: http.IncomingMessage, socket: Socket, head: Buffer, lent: LentReadConnection | undefined): void {
    const offered = protocolHeaderValues(req);
    const supported = request.kind === 'portforward' ? PORTFORWARD_SPDY_PROTOCOLS : REMOTECOMMAND_SPDY_PROTOCOLS;
    const protocol = negotiate(offered, supported);
    if (!protocol) return refuse(socket, 403, `none of the offered protocols [${offered.join(', ')}] is supported; use one of ${supported.join(', ')}`);
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' + `X-Stream-Protocol-Version: ${protocol}\r\n\r\n`,
    );
    const reads = lent ? { connection: lent, head } : undefined;
    if (head.length > 0 && !lent) socket.unshift(head);
    if (request.kind === 'portforward') return this.startPortForward(request, socket, reads);
    const session = new SpdyServerSession(
      socket,
      { maxStreams: MAX_STDIO_STREAMS, idleTimeoutMs: this.limits.idleTimeoutMs, pausedProbeMs: this.opts.pausedProbeMs },
      reads,
    );
    waitForStdioStreams(session, protocol, request, this.streamCreationTimeoutMs).then(
      (channels) => this.run(request, channels),
      (err: unknown) => {
        this.opts.log.info({ kind: request.kind, error: errorMessage(err) }, 'streaming connection abandoned');
        session.close();
      },
    );
  }

  private upgradeWebSocket(request: StreamRequest, req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim()).filter((p) => p !== '');
    if (request.kind === 'portforward') return this.upgradeWebSocketPortForward(request, req, socket, head, offered);
    const protocol = negotiate(offered, REMOTECOMMAND_WS_PROTOCOLS);
    if (!protocol) {
      return refuse(socket, 400, `none of the offered sub-protocols is supported; use one of ${REMOTECOMMAND_WS_PROTOCOLS.join(', ')}`);
    }
    this.acceptWebSocket(req, socket, head, protocol, (ws) => this.run(request, wsChannels(ws, request, this.wsChannelOptions(socket, protocol))));
  }

  /**
   * Port forward over WebSocket: SPDY tunneled in it (client-go), served as a SPDY session; or
   * kubelet's channel protocol, whose ports are checked before the upgrade.
   */
  private upgradeWebSocketPortForward(request: PortForwardRequest, req: http.IncomingMessage, socket: Duplex, head: Buffer, offered: string[]): void {
    const protocol = negotiate(offered, PORTFORWARD_WS_PROTOCOLS);
    if (!protocol && offered.length > 0) {
      return refuse(socket, 400, `none of the offered sub-protocols is supported; use one of ${PORTFORWARD_WS_PROTOCOLS.join(', ')}`);
    }
    if (protocol === PORTFORWARD_TUNNEL_PROTOCOL) {
      return this.acceptWebSocket(req, socket, head, protocol, (ws) => this.startPortForward(request, new WebSocketTunnel(ws)));
    }
    const maxPorts = Math.min(MAX_WEBSOCKET_PORTS, Math.floor(this.limits.portForwardStreamsPerSession / 2));
    const ports = portsOfWebSocket(new URL(req.url ?? '/', 'http://localhost').searchParams, request.ports, maxPorts);
    if (typeof ports === 'string') return refuse(socket, 400, ports);
    this.acceptWebSocket(req, socket, head, protocol, (ws) => {
      this.recorder.sessionOpened('portforward');
      // A pod that is not running fails each port's dial, which its error channel reports.
      const pod = this.podDialer(request, () => undefined);
      serveWsPortForward(
        ws,
        this.wsChannelOptions(socket, protocol ?? ''),
        { target: request, ports, dial: pod.dial, connectionSlot: () => this.connections.take(request.sandboxId), log: this.opts.log },
      ).finally(() => {
        pod.release();
        this.recorder.sessionClosed('portforward');
      });
    });
  }

  /**
   * Completes a WebSocket upgrade answering `protocol`, negotiated by the caller: `ws` itself
   * refuses the whole upgrade for a "/" in an offered sub-protocol, and client-go offers
   * SPDY/3.1+portforward.k8s.io.
   */
  private acceptWebSocket(req: http.IncomingMessage, socket: Duplex, head: Buffer, protocol: string | undefined, then: (ws: WebSocket) => void): void {
    delete req.headers['sec-websocket-protocol'];
    if (protocol) this.answeredProtocols.set(req, protocol);
    this.wss.handleUpgrade(req, socket, head, then);
  }

  private wsChannelOptions(socket: Duplex, protocol: string): WsChannelOptions {
    return { socket, protocol, idleTimeoutMs: this.limits.idleTimeoutMs, pausedProbeMs: this.opts.pausedProbeMs };
  }

  private run(request: Extract<StreamRequest, { kind: 'exec' | 'attach' }>, channels: StdioChannels): void {
    const { docker, log } = this.opts;
    this.recorder.sessionOpened(request.kind);
    const running = request.kind === 'exec' ? runExec(docker, request, channels, log) : runAttach(docker, request, channels, log);
    running
      .catch((err: unknown) => log.warn({ kind: request.kind, error: errorMessage(err) }, 'streaming session failed'))
      .finally(() => this.recorder.sessionClosed(request.kind));
  }

  /**
   * A SPDY port-forward session on `connection` (the upgraded socket, or a WebSocket tunnel):
   * its streams are served at once (a stream nobody takes is refused). Open from the upgrade
   * until the connection closes, whatever the dial to the pod does.
   */
  private startPortForward(request: PortForwardRequest, connection: Duplex, lent?: SpdyLentReads): void {
    const session = new SpdyServerSession(
      connection,
      {
        maxStreams: this.limits.portForwardStreamsPerSession,
        idleTimeoutMs: this.limits.idleTimeoutMs,
        pausedProbeMs: this.opts.pausedProbeMs,
      },
      lent,
    );
    this.recorder.sessionOpened('portforward');
    session.on('close', () => this.recorder.sessionClosed('portforward'));
    // A pod that is not running ends the session.
    const pod = this.podDialer(request, () => session.close());
    session.on('close', () => pod.release());
    servePortForward(session, {
      target: request,
      dial: pod.dial,
      connectionSlot: () => this.connections.take(request.sandboxId),
      pairTimeoutMs: this.streamCreationTimeoutMs,
      log: this.opts.log,
    });
  }

  /**
   * How one port-forward session reaches its pod: the first dial waits for the pod's inspect,
   * which also decides how (directly for host network, else through the pod's relay). A pod
   * that is not running fails every dial and calls `notRunning`. `release` once the session ends.
   */
  private podDialer(request: PortForwardRequest, notRunning: () => void): { dial: (port: number) => Promise<Duplex>; release: () => void } {
    const { docker, log } = this.opts;
    const hostNetwork = docker.inspectContainer(request.sandboxId).then((inspect) => {
      if (!inspect.State.Running || !inspect.State.Pid) throw new Error(`pod sandbox ${request.sandboxId} is not running`);
      return inspect.HostConfig.NetworkMode === 'host';
    });
    hostNetwork.catch((err: unknown) => {
      log.info({ sandboxId: request.sandboxId, error: errorMessage(err) }, 'port forward refused');
      notRunning();
    });
    const pod = this.relays.acquire(request.sandboxId);
    return {
      dial: async (port) => ((await hostNetwork) ? dialDirect(port) : pod.dial(port)),
      release: () => pod.release(),
    };
  }
}

type PortForwardRequest = Extract<StreamRequest, { kind: 'portforward' }>;

function protocolHeaderValues(req: http.IncomingMessage): string[] {
  // Node joins repeated custom headers with ", "; negotiate splits them again.
  const raw = req.headers[PROTOCOL_HEADER];
  return raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
}

/** After an answer that closes the connection, how long the client has to close its side. */
const REFUSE_GRACE_MS = 10_000;

function refuse(socket: Duplex, status: number, message: string): void {
  const body = `${message}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  // What the client still sends is dropped, so its close is seen; one that never closes is cut off.
  socket.resume();
  setTimeout(() => socket.destroy(), REFUSE_GRACE_MS).unref();
}

