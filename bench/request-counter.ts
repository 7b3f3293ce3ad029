// Counts the HTTP requests going to dockerd, by method and endpoint, through the test suite's
// pass-through proxy (test/support/docker-proxy.ts). dockerd's CPU is noisy; the number of
// requests a polling tick costs it is not, so the benchmark reports both. Used only for a
// separate, short counting phase, so the extra hop never touches a timed call.
import * as path from 'node:path';
import Dockerode from 'dockerode';
import type { CriClient } from '../test/support/client';
import { removePaths } from '../test/support/cleanup';
import { DockerProxy, requestsIn as requestHeadsIn } from '../test/support/docker-proxy';
import { startShim, tempDir, type ShimProcess } from '../test/support/shim';

/** A request's endpoint with the API version and query dropped and IDs and names replaced. Pure. */
export function endpointOf(method: string, path: string): string {
  const p = path
    .replace(/\?.*$/, '')
    .replace(/^\/v\d+\.\d+\//, '/')
    .replace(/^\/(containers|exec)\/(?!json$|create$)[^/]+/, '/$1/<id>')
    .replace(/^\/images\/(?!json$|create$|load$|search$|prune$|get$).+?(\/json|\/history|\/push|\/tag)?$/, '/images/<name>$1');
  return `${method} ${p}`;
}

/** The endpoint of every request line in a chunk of client-to-daemon bytes. Pure. */
export function requestsIn(chunk: string): string[] {
  return requestHeadsIn(chunk).map((r) => endpointOfLine(r.line));
}

function endpointOfLine(line: string): string {
  const space = line.indexOf(' ');
  return endpointOf(line.slice(0, space), line.slice(space + 1));
}

/** The test suite's Docker proxy, read as request counts by endpoint. */
export class RequestCounter {
  private readonly proxy: DockerProxy;
  private from = 0;

  constructor(socketPath: string) {
    this.proxy = new DockerProxy(socketPath);
  }

  get socketPath(): string {
    return this.proxy.socketPath;
  }

  up(): Promise<void> {
    return this.proxy.up();
  }

  down(): Promise<void> {
    return this.proxy.down();
  }

  /** Requests seen since the counter went up. */
  get seen(): number {
    return this.proxy.requests.length;
  }

  /** Starts counting afresh. */
  reset(): void {
    this.from = this.proxy.requests.length;
  }

  /** Requests since the last reset, by endpoint, most frequent first. */
  snapshot(): Record<string, number> {
    const counts = new Map<string, number>();
    for (const line of this.proxy.requests.slice(this.from)) {
      const endpoint = endpointOfLine(line);
      counts.set(endpoint, (counts.get(endpoint) ?? 0) + 1);
    }
    return Object.fromEntries([...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])));
  }
}

/**
 * Counts one side and then the other through one counter: first a shim (`shimArgs`) behind it,
 * then, that shim stopped so none of its background requests count against the raw side,
 * dockerode through it. Removes the counter's socket directory.
 */
export async function countBothSides<T>(
  shimArgs: readonly string[],
  shimSide: (counter: RequestCounter, client: CriClient) => Promise<T>,
  rawSide: (counter: RequestCounter, docker: Dockerode) => Promise<T>,
): Promise<{ shim: T; raw: T }> {
  const dir = tempDir('bench-counter');
  const counter = new RequestCounter(path.join(dir, 'docker.sock'));
  await counter.up();
  let counted: ShimProcess | undefined;
  try {
    counted = await startShim({ args: [...shimArgs, `--docker-endpoint=unix://${counter.socketPath}`] });
    const shim = await shimSide(counter, counted.client);
    await counted.stop();
    counted = undefined;
    const raw = await rawSide(counter, new Dockerode({ socketPath: counter.socketPath }));
    return { shim, raw };
  } finally {
    await counted?.stop();
    await counter.down();
    removePaths(dir);
  }
}
