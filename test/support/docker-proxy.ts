// A unix-socket proxy in front of the real Docker socket. Closing it makes Docker
// "unreachable" for whoever talks through it, without touching the daemon the rest of the
// suite uses; opening it again brings Docker "back".
import * as fs from 'node:fs';
import * as net from 'node:net';
import { testDockerSocket } from './images';

const REQUEST_HEAD = /(GET|POST|PUT|DELETE|HEAD) (\/\S*) HTTP\/1\.[01]\r\n((?:[^\r\n]+\r\n)*)/g;
const USER_AGENT = /^user-agent: *(.*)$/im;

/**
 * Every HTTP request in a chunk of client-to-daemon bytes: its line as "METHOD path?query" and
 * its User-Agent ('' without one). A kept-alive connection carries many requests; request heads
 * are written whole. (A body that happened to hold a request line would count too; the calls
 * watched here are small.) Pure.
 */
export function requestsIn(chunk: string): Array<{ line: string; userAgent: string }> {
  return [...chunk.matchAll(REQUEST_HEAD)].map((m) => ({ line: `${m[1]} ${m[2]}`, userAgent: USER_AGENT.exec(m[3] ?? '')?.[1]?.trim() ?? '' }));
}

export class DockerProxy {
  private server: net.Server | undefined;
  private readonly open = new Set<net.Socket>();
  /** Holds each request this long before passing it on (a slow daemon). */
  delayMs = 0;
  /** Requests held longer than the rest (see `delay`). */
  private readonly delays: Array<{ line: RegExp; ms: number }> = [];
  /** Chunks of request data received from clients so far (connections are kept alive and reused). */
  received = 0;
  /** "METHOD path?query" of every request seen so far, in order. */
  readonly requests: string[] = [];
  /** The User-Agent of each of those ('' without one), in the same order. */
  readonly userAgents: string[] = [];
  /** While true, nothing passes either way (a hung daemon); see `hang`. */
  private hung = false;
  /** What each connection was sent while hung, passed on at `resume`. */
  private readonly held = new Map<net.Socket, { upstream: net.Socket; chunks: Buffer[] }>();
  /** Requests the proxy answers itself instead of Docker (see `answer`). */
  private readonly answers: Array<{ line: RegExp; status: number; message: string }> = [];

  constructor(
    readonly socketPath: string,
    private readonly target = testDockerSocket(),
  ) {}

  async up(): Promise<void> {
    fs.rmSync(this.socketPath, { force: true });
    /** Each connection's last chunk passed on (or waiting to be). */
    const ordered = new WeakMap<net.Socket, Promise<void>>();
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target);
      this.clients.add(client);
      this.open.add(client).add(upstream);
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
        this.open.delete(client);
        this.open.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      upstream.pipe(client);
      if (this.hung) upstream.pause();
      client.on('data', (chunk: Buffer) => {
        if (this.hung) {
          const held = this.held.get(client) ?? { upstream, chunks: [] };
          held.chunks.push(chunk);
          this.held.set(client, held);
          return;
        }
        this.received++;
        for (const { line, userAgent } of requestsIn(chunk.toString('latin1'))) {
          this.requests.push(line);
          this.userAgents.push(userAgent);
          const canned = this.answers.find((a) => a.line.test(line));
          if (canned) {
            // Answered here, and the connection closed: Docker never sees the request.
            const body = JSON.stringify({ message: canned.message });
            client.end(`HTTP/1.1 ${canned.status} Canned\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
            upstream.destroy();
            return;
          }
        }
        const lines = requestsIn(chunk.toString('latin1')).map((r) => r.line);
        const delayMs = Math.max(this.delayMs, ...this.delays.filter((d) => lines.some((l) => d.line.test(l))).map((d) => d.ms));
        const before = ordered.get(client);
        if (delayMs === 0 && before === undefined) {
          upstream.write(chunk);
          return;
        }
        // Each chunk `delayMs` after it came, in order: one held longer holds back what follows it.
        const due = Date.now() + delayMs;
        const sent = (before ?? Promise.resolve()).then(async () => {
          const wait = due - Date.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait).unref());
          if (upstream.writable) upstream.write(chunk);
        });
        ordered.set(client, sent);
        void sent.then(() => ordered.get(client) === sent && ordered.delete(client));
      });
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.socketPath, resolve));
    this.server = server;
  }

  /**
   * Answers the requests whose "METHOD path?query" line matches `line` with `status` and
   * Docker's error body, without passing them on: a pull that cannot reach its registry, say,
   * with no traffic leaving this machine.
   */
  answer(line: RegExp, status: number, message: string): void {
    this.answers.push({ line, status, message });
  }

  /**
   * Holds the requests whose "METHOD path?query" line matches `line` `ms` before passing them
   * on (one kind of request Docker is slow to answer), and behind them whatever follows on
   * their connection.
   */
  delay(line: RegExp, ms: number): void {
    this.delays.push({ line, ms });
  }

  /**
   * A daemon that takes connections and answers nothing (as a dockerd stopped with SIGSTOP):
   * requests are held, and nothing comes back, until `resume`.
   */
  hang(): void {
    this.hung = true;
    for (const s of this.open) if (!this.isClient(s)) s.pause();
  }

  /** Passes on what was held, in order, and lets answers through again. */
  resume(): void {
    this.hung = false;
    for (const [client, { upstream, chunks }] of this.held) if (!client.destroyed) for (const c of chunks) upstream.write(c);
    this.held.clear();
    for (const s of this.open) s.resume();
  }

  private readonly clients = new WeakSet<net.Socket>();
  private isClient(s: net.Socket): boolean {
    return this.clients.has(s);
  }

  /** Stops listening and cuts every open connection; the socket file goes away. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.open) s.destroy();
    this.open.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(this.socketPath, { force: true });
  }
}
