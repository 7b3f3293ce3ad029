// Test clients for the streaming server: SPDY/3.1 (spdy-transport, as an HTTP upgrade like
// kubelet's), WebSocket (ws) with the channel sub-protocols, and SPDY tunneled in a WebSocket
// (client-go's port-forward dialer).
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import transport, { type SpdyClientStream, type SpdyConnection } from 'spdy-transport';
import WebSocket from 'ws';
import type { CriClient } from './client';
import { RawSpdyClient } from './raw-spdy';

export { RawSpdyClient };

export interface UpgradeRefusal {
  status: number;
  body: string;
}

/** Opens `url` with an upgrade to SPDY/3.1 offering `protocols`; rejects with the HTTP answer otherwise. */
export function spdyConnect(url: string, protocols: string[]): Promise<{ conn: SpdyConnection; protocol: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': protocols },
    });
    req.once('upgrade', (res, socket: Socket, head: Buffer) => {
      if (head.length > 0) socket.unshift(head);
      const conn = transport.connection.create(socket, { protocol: 'spdy', isServer: false });
      conn.on('error', () => undefined);
      conn.start(3.1);
      resolve({ conn, protocol: String(res.headers['x-stream-protocol-version']), socket });
    });
    rejectOnRefusal(req, reject);
    req.end();
  });
}

export function openStream(conn: SpdyConnection, headers: Record<string, string>): Promise<SpdyClientStream> {
  return new Promise((resolve, reject) => {
    conn.request({ method: 'POST', path: '/', headers }, (err, stream) => (err ? reject(err) : resolve(stream)));
  });
}

/**
 * `GET /index.html` to `port` of the pod through PortForward over SPDY, as kubectl port-forward
 * sends it: the text of the port's error stream, and the answer.
 */
export async function httpGetThroughPortForward(client: CriClient, podSandboxId: string, port: number): Promise<{ error: string; body: string }> {
  // Each connection uses a fresh URL: tokens are single-use.
  const { url } = await client.runtime.PortForward({ podSandboxId, port: [port] });
  const { conn } = await spdyConnect(url, ['portforward.k8s.io']);
  const error = await openStream(conn, { streamType: 'error', port: String(port), requestID: '0' });
  error.end();
  const data = await openStream(conn, { streamType: 'data', port: String(port), requestID: '0' });
  const errorText = collect(error);
  const body = collect(data);
  data.end('GET /index.html HTTP/1.0\r\n\r\n');
  return { error: (await errorText).toString(), body: (await body).toString() };
}

/** Everything a readable side delivers until it ends. */
export function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer | string) => chunks.push(Buffer.from(c)));
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('close', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}

export interface ExecStreams {
  stdin?: SpdyClientStream;
  resize?: SpdyClientStream;
  stdout: Promise<Buffer>;
  stderr: Promise<Buffer>;
  error: Promise<Buffer>;
}

/** Opens the streams a remote-command client opens (error first, as kubectl does). */
export async function openExecStreams(conn: SpdyConnection, opts: { stdin?: boolean; stdout?: boolean; stderr?: boolean; tty?: boolean }): Promise<ExecStreams> {
  const open = async (streamType: string): Promise<SpdyClientStream> => openStream(conn, { streamType });
  const error = await open('error');
  const errorOut = collect(error);
  error.end();
  const stdin = opts.stdin ? await open('stdin') : undefined;
  const stdout = opts.stdout ? await open('stdout') : undefined;
  stdout?.end();
  const stderr = opts.stderr && !opts.tty ? await open('stderr') : undefined;
  stderr?.end();
  const resize = opts.tty ? await open('resize') : undefined;
  return {
    stdin,
    resize,
    stdout: stdout ? collect(stdout) : Promise.resolve(Buffer.alloc(0)),
    stderr: stderr ? collect(stderr) : Promise.resolve(Buffer.alloc(0)),
    error: errorOut,
  };
}

export interface WsSession {
  ws: WebSocket;
  protocol: string;
  /** Resolves when the server closes, with what arrived on each channel. */
  done: Promise<Map<number, Buffer>>;
  send(channel: number, data: Buffer | string): void;
  /** What arrived so far, per channel. */
  received(): Map<number, Buffer>;
}

export function wsConnect(url: string, protocols: string[]): Promise<WsSession> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), protocols);
    const received = new Map<number, Buffer>();
    const done = new Promise<Map<number, Buffer>>((res) => ws.once('close', () => res(received)));
    ws.on('message', (raw: Buffer, isBinary: boolean) => {
      let channel: number;
      let data: Buffer;
      if (isBinary) {
        channel = raw[0]!;
        data = raw.subarray(1);
      } else {
        const text = raw.toString('latin1');
        channel = text.charCodeAt(0) - 0x30;
        data = Buffer.from(text.slice(1), 'base64');
      }
      received.set(channel, Buffer.concat([received.get(channel) ?? Buffer.alloc(0), data]));
    });
    ws.once('open', () =>
      resolve({
        ws,
        protocol: ws.protocol,
        done,
        send(channel, data) {
          ws.send(Buffer.concat([Buffer.from([channel]), Buffer.from(data)]));
        },
        received: () => received,
      }),
    );
    rejectOnWebSocketRefusal(ws, reject);
  });
}

/** A refused WebSocket upgrade rejects with the answer's status and body. */
function rejectOnWebSocketRefusal(ws: WebSocket, reject: (err: Error) => void): void {
  ws.once('unexpected-response', (_req, res) => {
    let body = '';
    res.on('data', (d: Buffer) => (body += d.toString()));
    res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}: ${body}`), { status: res.statusCode, body })));
  });
  ws.once('error', reject);
}

/** The WebSocket sub-protocol client-go offers to tunnel SPDY port forward. */
export const SPDY_TUNNEL_PORTFORWARD = 'SPDY/3.1+portforward.k8s.io';

/**
 * Opens `url` as client-go's NewSPDYOverWebsocketDialer does: a WebSocket upgrade offering
 * SPDY/3.1+portforward.k8s.io (which `ws`'s own client refuses to send, for its "/"), whose
 * binary messages carry SPDY; with a spdystream-like client over it.
 */
export async function wsSpdyTunnel(url: string): Promise<{ client: RawSpdyClient; protocol: string; socket: Socket }> {
  const { socket, res } = await upgradeRequest(url, 'GET', webSocketUpgradeHeaders(SPDY_TUNNEL_PORTFORWARD));
  return { client: new RawSpdyClient(new WebSocketClientStream(socket)), protocol: String(res.headers['sec-websocket-protocol']), socket };
}

/**
 * The client side of a WebSocket as a byte stream, as client-go's TunnelingConnection is one:
 * each write one masked binary message; what arrives in binary messages read as it comes; pings
 * answered; the server's close answered and the connection ended.
 */
class WebSocketClientStream extends Duplex {
  private buffered: Buffer = Buffer.alloc(0);

  constructor(private readonly socket: Socket) {
    super();
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => undefined);
    socket.once('close', () => this.destroy());
    socket.once('end', () => this.push(null));
  }

  override _read(): void {
    this.socket.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.socket.write(maskedFrame(0x2, chunk), done);
  }

  override _final(done: (err?: Error | null) => void): void {
    this.socket.end(maskedFrame(0x8, Buffer.from([0x03, 0xe8])), done);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.socket.destroy();
    done(err);
  }

  private onData(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    for (;;) {
      if (this.buffered.length < 2) return;
      const opcode = this.buffered[0]! & 0x0f;
      let length = this.buffered[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.buffered.length < 4) return;
        length = this.buffered.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.buffered.length < 10) return;
        length = Number(this.buffered.readBigUInt64BE(2));
        offset = 10;
      }
      if (this.buffered.length < offset + length) return;
      const payload = this.buffered.subarray(offset, offset + length);
      this.buffered = this.buffered.subarray(offset + length);
      if (opcode === 0x0 || opcode === 0x2) {
        if (!this.push(Buffer.from(payload))) this.socket.pause();
      } else if (opcode === 0x9) this.socket.write(maskedFrame(0xa, payload));
      else if (opcode === 0x8) {
        if (!this.socket.writableEnded) this.socket.end(maskedFrame(0x8, payload.subarray(0, 2)));
      }
    }
  }
}

/** One final frame as a client sends it (masked). */
function maskedFrame(opcode: number, payload: Buffer): Buffer {
  const mask = randomBytes(4);
  const head = payload.length < 126 ? Buffer.alloc(2) : payload.length < 0x10000 ? Buffer.alloc(4) : Buffer.alloc(10);
  head[0] = 0x80 | opcode;
  if (payload.length < 126) head[1] = 0x80 | payload.length;
  else if (payload.length < 0x10000) {
    head[1] = 0x80 | 126;
    head.writeUInt16BE(payload.length, 2);
  } else {
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(payload.length), 2);
  }
  const masked = Buffer.from(payload);
  for (let i = 0; i < masked.length; i++) masked[i] = masked[i]! ^ mask[i & 3]!;
  return Buffer.concat([head, mask, masked]);
}

/** The metav1.Status a v4 error stream carries. */
export interface StatusDoc {
  status: string;
  reason?: string;
  message?: string;
  details?: { causes?: Array<{ reason: string; message: string }> };
}

export function parseStatus(raw: Buffer): StatusDoc {
  return JSON.parse(raw.toString()) as StatusDoc;
}

/** A RawSpdyClient on `url`, upgraded to SPDY/3.1 offering `protocol`. */
export async function rawSpdyConnect(url: string, protocol: string): Promise<RawSpdyClient> {
  return new RawSpdyClient(await rawUpgrade(url, protocol));
}

/** An HTTP upgrade to SPDY/3.1 offering `protocol`; hands back the raw socket. */
export function rawUpgrade(url: string, protocol: string): Promise<Socket> {
  return upgradeRequest(url, 'POST', { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': protocol }).then(({ socket }) => socket);
}

/** A client's WebSocket upgrade headers offering `protocol`. */
export function webSocketUpgradeHeaders(protocol: string): Record<string, string> {
  return {
    Connection: 'Upgrade',
    Upgrade: 'websocket',
    'Sec-WebSocket-Version': '13',
    'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
    'Sec-WebSocket-Protocol': protocol,
  };
}

/** An HTTP upgrade of `url`: the raw socket (what came with the answer put back) and the answer. */
export function upgradeRequest(url: string, method: string, headers: Record<string, string>): Promise<{ socket: Socket; res: http.IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers });
    req.once('upgrade', (res: http.IncomingMessage, socket: Socket, head: Buffer) => {
      if (head.length > 0) socket.unshift(head);
      resolve({ socket, res });
    });
    rejectOnRefusal(req, reject);
    req.end();
  });
}

/** An upgrade the server refused with an HTTP answer (or a failed request) rejects, with the answer's status and body. */
function rejectOnRefusal(req: http.ClientRequest, reject: (err: Error) => void): void {
  req.once('response', (res) => {
    let body = '';
    res.on('data', (d: Buffer) => (body += d.toString()));
    res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}: ${body}`), { status: res.statusCode, body })));
  });
  req.once('error', reject);
}
