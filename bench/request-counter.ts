// A unix-socket pass-through in front of the Docker socket that counts the HTTP requests going
// to dockerd, by method and endpoint. dockerd's CPU on this shared machine is noisy; the number
// of requests a polling tick costs it is not, so the benchmark reports both. Used only for a
// separate, short counting phase, so the extra hop never touches a timed call.
import * as fs from 'node:fs';
import * as net from 'node:net';

const REQUEST_LINE = /(GET|POST|PUT|DELETE|HEAD) (\/[^ ?]*)[^ ]* HTTP\/1\.[01]\r\n/g;

/** A request's endpoint with the API version dropped and IDs and names replaced. Pure. */
export function endpointOf(method: string, path: string): string {
  const p = path
    .replace(/^\/v\d+\.\d+\//, '/')
    .replace(/^\/(containers|exec)\/(?!json$|create$)[^/]+/, '/$1/<id>')
    .replace(/^\/images\/(?!json$|create$|load$|search$|prune$|get$).+?(\/json|\/history|\/push|\/tag)?$/, '/images/<name>$1');
  return `${method} ${p}`;
}

/** Every request line in a chunk of client-to-daemon bytes. Pure. */
export function requestsIn(chunk: string): string[] {
  return [...chunk.matchAll(REQUEST_LINE)].map((m) => endpointOf(m[1]!, m[2]!));
}

export class RequestCounter {
  private server: net.Server | undefined;
  private readonly open = new Set<net.Socket>();
  private counts = new Map<string, number>();

  constructor(
    readonly socketPath: string,
    private readonly target = '/var/run/docker.sock',
  ) {}

  async up(): Promise<void> {
    fs.rmSync(this.socketPath, { force: true });
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target);
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
      client.on('data', (chunk: Buffer) => {
        // Request heads are written whole; a body that happened to contain a request line
        // would be miscounted, but polling calls are GETs without bodies.
        for (const r of requestsIn(chunk.toString('latin1'))) this.counts.set(r, (this.counts.get(r) ?? 0) + 1);
        upstream.write(chunk);
      });
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.socketPath, resolve));
    this.server = server;
  }

  /** Starts counting afresh. */
  reset(): void {
    this.counts = new Map();
  }

  /** Requests since the last reset, by endpoint, most frequent first. */
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])));
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.open) s.destroy();
    this.open.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(this.socketPath, { force: true });
  }
}
