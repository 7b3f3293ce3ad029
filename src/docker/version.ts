// Docker's version, looked up through a 60 s cache (Version and Status are polled constantly,
// the answer changes only when the daemon is upgraded), and the start-up gate that refuses a
// daemon whose API is older than the oldest we speak.
import NodeCache from 'node-cache';
import semver from 'semver';
import type { CallOptions, DockerClient } from './client';
import type { DockerVersion } from './types';

/** Docker 20.10's API; the oldest whose container, exec and image endpoints we rely on. */
export const MIN_DOCKER_API_VERSION = '1.41';

/** Docker API versions are "major.minor"; semver wants three parts. */
export function apiVersionToSemver(apiVersion: string): string {
  const m = /^\s*v?(\d+)\.(\d+)(?:\.(\d+))?\s*$/.exec(apiVersion);
  if (!m) throw new Error(`${JSON.stringify(apiVersion)} is not a Docker API version (major.minor)`);
  return `${Number(m[1])}.${Number(m[2])}.${Number(m[3] ?? 0)}`;
}

export function isApiVersionAtLeast(actual: string, minimum: string): boolean {
  return semver.gte(apiVersionToSemver(actual), apiVersionToSemver(minimum));
}

export class DockerTooOldError extends Error {}

/** Throws DockerTooOldError naming both versions when the daemon is older than we support. */
export function assertSupportedDocker(v: DockerVersion, minimum: string = MIN_DOCKER_API_VERSION): void {
  if (!isApiVersionAtLeast(v.ApiVersion, minimum)) {
    throw new DockerTooOldError(
      `Docker ${v.Version} speaks API ${v.ApiVersion}, but cri-docker-shim needs API ${minimum} or newer (Docker 20.10+)`,
    );
  }
}

export class DockerVersionCache {
  private readonly cache: NodeCache;

  constructor(
    private readonly docker: DockerClient,
    ttlSeconds = 60,
  ) {
    this.cache = new NodeCache({ stdTTL: ttlSeconds, checkperiod: 0, useClones: false });
  }

  async get(opts?: CallOptions): Promise<DockerVersion> {
    const hit = this.cache.get<DockerVersion>('version');
    if (hit) return hit;
    const fresh = await this.docker.version(opts);
    this.cache.set('version', fresh);
    return fresh;
  }

  /** Forget the cached answer (after the daemon restarts it may have been upgraded). */
  invalidate(): void {
    this.cache.del('version');
  }

  close(): void {
    this.cache.close();
  }
}
