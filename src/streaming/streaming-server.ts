// The streaming server: Exec, Attach and PortForward RPCs register a request here and hand the
// client a URL with a single-use token ({base}/exec/{token}, /attach/…, /portforward/…). The
// client then upgrades that URL to SPDY/3.1 or to a WebSocket, and the connection runs the
// request. Unknown, expired or reused tokens get 404 and run nothing. Sessions are counted per
// pod (exec and attach to all its containers and port forwards to it together) and on the node,
// and refused past the bounds (limits.ts) with 429 and the reason.
import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { DockerClient } from '../docker/client';
import { errorMessage } from '../errors';
import type { Logger } from '../util/logger';
import { parseHostPort } from '../util/net';
import { DEFAULT_STREAMING_LIMITS, MAX_STDIO_STREAMS, Slots, type StreamingLimits } from './limits';
import { PodRelays, startPodRelay } from './pod-relay';
import { dialDirect, servePortForward } from './port-forward-streams';
import {
  negotiate,
  PORTFORWARD_SPDY_PROTOCOLS,
  PROTOCOL_HEADER,
  REMOTECOMMAND_SPDY_PROTOCOLS,
  REMOTECOMMAND_WS_PROTOCOLS,
} from './protocol';
import type { StreamRequest } from './requests';
import { runAttach, runExec } from './run-command';
import { SpdyServerSession } from './spdy/session';
import { waitForStdioStreams } from './spdy-channels';
import { DEFAULT_TOKEN_TTL_MS, redactToken, TokenCache } from './tokens';
import { wsChannels } from './ws-channels';
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
export const DEFAULT_STREAM_CREATION_TIMEOUT_MS = 30_000;

export interface StreamingServerOptions {
  /** host:port; port 0 picks a free one. */
  bindAddress: string;
  /**
   * Docker itself, not a cache: port forward checks, after opening the pod's network namespace,
   * that the sandbox still runs as the process it opened it by.
   */
  docker: DockerClient;
  log: Logger;
  tokenTtlMs?: number;
  streamCreationTimeoutMs?: number;
  recorder?: StreamingRecorder;
  /** Bounds other than the defaults (tests). */
  limits?: Partial<StreamingLimits>;
  /** While a connection is not read, how often it is probed (tests). */
  pausedProbeMs?: number;
}

const ROUTE = /^\/(exec|attach|portforward)\/([^/?]+)$/;

export class StreamingServer {
  private readonly http = http.createServer((req, res) => this.onPlainRequest(req, res));
  private readonly wss: WebSocketServer;
  private readonly tokens: TokenCache<StreamRequest>;
  private readonly sockets = new Set<Duplex>();
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
    this.relays = new PodRelays((sandboxId) => startPodRelay(opts.docker, sandboxId));
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.limits.webSocketMaxMessageBytes,
      handleProtocols: (offered) => negotiate([...offered], REMOTECOMMAND_WS_PROTOCOLS) ?? false,
    });
    this.http.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(req, socket, head));
    this.http.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  async listen(): Promise<void> {
    const { host, port } = splitHostPort(this.opts.bindAddress);
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen({ host, port }, () => {
        this.http.off('error', reject);
        resolve();
      });
    });
    const bound = this.http.address() as AddressInfo;
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
    for (const socket of this.sockets) socket.destroy();
    for (const client of this.wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
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

  private onUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
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
    const upgrade = (req.headers.upgrade ?? '').toLowerCase();
    if (upgrade === 'websocket') return this.upgradeWebSocket(request, req, socket, head);
    if (upgrade === 'spdy/3.1') return this.upgradeSpdy(request, req, socket as Socket, head);
    refuse(socket, 400, `unsupported upgrade ${JSON.stringify(req.headers.upgrade ?? '')}`);
  }

  private upgradeSpdy(request: StreamRequest, req: http.IncomingMessage, socket: Socket, head: Buffer): void {
    const offered = protocolHeaderValues(req);
    const supported = request.kind === 'portforward' ? PORTFORWARD_SPDY_PROTOCOLS : REMOTECOMMAND_SPDY_PROTOCOLS;
    const protocol = negotiate(offered, supported);
    if (!protocol) return refuse(socket, 403, `none of the offered protocols [${offered.join(', ')}] is supported; use one of ${supported.join(', ')}`);
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' + `X-Stream-Protocol-Version: ${protocol}\r\n\r\n`,
    );
    if (head.length > 0) socket.unshift(head);
    const session = new SpdyServerSession(socket, {
      maxStreams: request.kind === 'portforward' ? this.limits.portForwardStreamsPerSession : MAX_STDIO_STREAMS,
      idleTimeoutMs: this.limits.idleTimeoutMs,
      pausedProbeMs: this.opts.pausedProbeMs,
    });
    if (request.kind === 'portforward') {
      // Open from the upgrade until the connection closes, whatever the dial to the pod does.
      this.recorder.sessionOpened('portforward');
      session.on('close', () => this.recorder.sessionClosed('portforward'));
      this.startPortForward(request, session);
      return;
    }
    waitForStdioStreams(session, protocol, request, this.streamCreationTimeoutMs).then(
      (channels) => this.run(request, channels),
      (err: unknown) => {
        this.opts.log.info({ kind: request.kind, error: errorMessage(err) }, 'streaming connection abandoned');
        session.close();
      },
    );
  }

  private upgradeWebSocket(request: StreamRequest, req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    if (request.kind === 'portforward') return refuse(socket, 400, 'port forward is served over SPDY (portforward.k8s.io) only');
    const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    if (!negotiate(offered, REMOTECOMMAND_WS_PROTOCOLS)) {
      return refuse(socket, 400, `none of the offered sub-protocols is supported; use one of ${REMOTECOMMAND_WS_PROTOCOLS.join(', ')}`);
    }
    this.wss.handleUpgrade(req, socket, head, (ws: WebSocket) =>
      this.run(request, wsChannels(ws, request, { socket, idleTimeoutMs: this.limits.idleTimeoutMs, pausedProbeMs: this.opts.pausedProbeMs })),
    );
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
   * Serves the session's streams at once (a stream nobody takes is refused); the first dial
   * waits for the pod's inspect, which also decides how to reach it. A pod that is not running
   * ends the session.
   */
  private startPortForward(request: Extract<StreamRequest, { kind: 'portforward' }>, session: SpdyServerSession): void {
    const { docker, log } = this.opts;
    const hostNetwork = docker.inspectContainer(request.sandboxId).then((inspect) => {
      if (!inspect.State.Running || !inspect.State.Pid) throw new Error(`pod sandbox ${request.sandboxId} is not running`);
      return inspect.HostConfig.NetworkMode === 'host';
    });
    hostNetwork.catch((err: unknown) => {
      log.info({ sandboxId: request.sandboxId, error: errorMessage(err) }, 'port forward refused');
      session.close();
    });
    const pod = this.relays.acquire(request.sandboxId);
    session.on('close', () => pod.release());
    servePortForward(session, {
      target: request,
      dial: async (port) => ((await hostNetwork) ? dialDirect(port) : pod.dial(port)),
      connectionSlot: () => this.connections.take(request.sandboxId),
      pairTimeoutMs: this.streamCreationTimeoutMs,
      log,
    });
  }
}

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

function splitHostPort(address: string): { host: string; port: number } {
  const parsed = parseHostPort(address);
  if (!parsed) throw new Error(`streaming address ${JSON.stringify(address)} is not host:port`);
  return parsed;
}
