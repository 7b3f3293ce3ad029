// The shim's plain HTTP servers (streaming, metrics). Node's http.Server enforces its header and
// request deadlines from one interval (connectionsCheckingInterval, every 30 s) that runs from
// listen() to close(), with connections or without: an idle shim woke twice a minute for it.
// Here each connection carries its own deadline, armed only while an exchange is under way (from
// the connection, or the last answer, until the next answer or an upgrade), so a server with no
// connection runs nothing, and a client that sends its request a byte at a time is still cut off.
import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { parseHostPort } from './net';
import { MAX_TIMER_DELAY_MS } from './timer-delay';

/** A request must be read and answered within this: Node's own headersTimeout default. */
const EXCHANGE_DEADLINE_MS = 60_000;

export class QuietHttpServer {
  readonly http: http.Server;
  private readonly sockets = new Set<Duplex>();
  /** Each open connection's deadline, armed while an exchange is under way. */
  private readonly deadlines = new WeakMap<Socket, { arm(): void; disarm(): void }>();

  constructor(
    onRequest: http.RequestListener,
    private readonly what: string,
    deadlineMs = EXCHANGE_DEADLINE_MS,
  ) {
    // Node's own checks off (0), and their interval as far out as a timer goes: ours replace them.
    this.http = http.createServer({ headersTimeout: 0, requestTimeout: 0, connectionsCheckingInterval: MAX_TIMER_DELAY_MS }, onRequest);
    this.http.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      let timer: NodeJS.Timeout | undefined;
      const disarm = (): void => clearTimeout(timer);
      const arm = (): void => {
        disarm();
        timer = setTimeout(() => socket.destroy(), deadlineMs);
        timer.unref();
      };
      this.deadlines.set(socket, { arm, disarm });
      arm();
      socket.once('close', () => {
        disarm();
        this.sockets.delete(socket);
      });
    });
    // Answered: the connection may carry another request (keep-alive), under a deadline of its own.
    this.http.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => res.once('finish', () => this.deadlines.get(req.socket as Socket)?.arm()));
    // Upgraded: the protocol that takes the socket over bounds it from now on. With no one else
    // to take it (the metrics server), it is closed, as Node closes it with no 'upgrade' listener.
    this.http.on('upgrade', (_req: http.IncomingMessage, socket: Socket) => {
      if (this.http.listenerCount('upgrade') > 1) this.deadlines.get(socket)?.disarm();
      else socket.destroy();
    });
  }

  /** A socket that took a connection over (lent reads: util/lent-reads.ts): ended by close() too. */
  track(socket: Duplex): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  /** Binds `address` (host:port; port 0 picks a free one); resolves with what was bound. */
  async listen(address: string): Promise<AddressInfo> {
    const target = parseHostPort(address);
    if (!target) throw new Error(`${this.what} address ${JSON.stringify(address)} is not host:port`);
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen({ host: target.host, port: target.port }, () => {
        this.http.off('error', reject);
        resolve();
      });
    });
    return this.http.address() as AddressInfo;
  }

  /** Ends every connection, then stops listening. */
  async close(): Promise<void> {
    if (!this.http.listening) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
