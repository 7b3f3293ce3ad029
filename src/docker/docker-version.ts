// Docker's version and runtimes, looked up through a 60 s cache (node-cache), and the
// start-up gate that refuses a daemon whose API is older than the oldest we speak.
import NodeCache from 'node-cache';
import semver from 'semver';
import type { CallOptions, DockerClient } from './client';
import { imageStoreKindOf, type ImageStoreKind } from './documents';
import type { DockerInfo, DockerVersion } from './types';

/** Docker 20.10's API; the oldest whose container, exec and image endpoints we rely on. */
const MIN_DOCKER_API_VERSION = '1.41';

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

/** API 1.44 (Docker 25) brought bind options: recursive or not for read-only binds, and binds that make their mount point. */
export const BIND_OPTIONS_API_VERSION = '1.44';

/** API 1.48 (Docker 28.0) mounts an image's files in a container; 1.49 a path inside it. */
export const IMAGE_MOUNT_API_VERSION = '1.48';
export const IMAGE_SUBPATH_API_VERSION = '1.49';

/** What the engine running here can do beyond API 1.41. */
export interface EngineFeatures {
  /** Docker's API speaks bind options (see BIND_OPTIONS_API_VERSION). */
  bindOptions: boolean;
  /** Docker can make a bind recursively read-only: bind options and the kernel's mount_setattr (Linux 5.12). */
  recursiveReadOnlyMounts: boolean;
  /** Docker mounts images (IMAGE_MOUNT_API_VERSION), and paths inside them (IMAGE_SUBPATH_API_VERSION). */
  imageMounts: boolean;
  imageSubpaths: boolean;
  /** CDI is on in this engine (its info names the spec dirs it reads). */
  cdi: boolean;
  /** SELinux labelling is on in this engine (its info's security options name it): relabelling means something. */
  selinux: boolean;
}

/** The features from Docker's API version, its host's kernel release ("6.1.0-18-amd64") and its info. */
export function engineFeatures(apiVersion: string, kernelRelease: string | undefined, info: Pick<DockerInfo, 'CDISpecDirs' | 'SecurityOptions'> = {}): EngineFeatures {
  const bindOptions = isApiVersionAtLeast(apiVersion, BIND_OPTIONS_API_VERSION);
  const m = /^(\d+)\.(\d+)/.exec(kernelRelease ?? '');
  const mountSetattr = m !== null && (Number(m[1]) > 5 || (Number(m[1]) === 5 && Number(m[2]) >= 12));
  return {
    bindOptions,
    recursiveReadOnlyMounts: bindOptions && mountSetattr,
    imageMounts: isApiVersionAtLeast(apiVersion, IMAGE_MOUNT_API_VERSION),
    imageSubpaths: isApiVersionAtLeast(apiVersion, IMAGE_SUBPATH_API_VERSION),
    cdi: (info.CDISpecDirs ?? []).length > 0,
    selinux: (info.SecurityOptions ?? []).some((o) => o.split(',').includes('name=selinux')),
  };
}

/**
 * Facts about the daemon that change only when it is upgraded or reconfigured (its version,
 * its runtimes), cached for a minute: Version, Status and RunPodSandbox ask constantly.
 */
export class DockerFacts {
  private readonly cache: NodeCache;

  constructor(
    private readonly docker: DockerClient,
    ttlSeconds = 60,
  ) {
    this.cache = new NodeCache({ stdTTL: ttlSeconds, checkperiod: 0, useClones: false });
  }

  private async cached<T>(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.cache.get<T>(key);
    if (hit !== undefined) return hit;
    const fresh = await load();
    this.cache.set(key, fresh);
    return fresh;
  }

  version(opts?: CallOptions): Promise<DockerVersion> {
    return this.cached('version', () => this.docker.version(opts));
  }

  private info(opts?: CallOptions): Promise<DockerInfo> {
    return this.cached('info', () => this.docker.info(opts));
  }

  /** What this engine can do beyond API 1.41 (from its version and info answers). */
  async features(opts?: CallOptions): Promise<EngineFeatures> {
    const [v, info] = await Promise.all([this.version(opts), this.info(opts)]);
    return engineFeatures(v.ApiVersion, v.KernelVersion, info);
  }

  /** Where the engine keeps images: a graph driver, or containerd's image store (documents.ts). */
  async imageStore(opts?: CallOptions): Promise<ImageStoreKind> {
    return imageStoreKindOf(await this.info(opts));
  }

  /** The names of the OCI runtimes Docker is configured with ("runc", ...). */
  async runtimes(opts?: CallOptions): Promise<string[]> {
    return runtimeNames(await this.info(opts));
  }

  /** Holds answers got elsewhere (start-up's), as if they had been asked for here. */
  remember(version: DockerVersion, info: DockerInfo): void {
    this.cache.set('version', version);
    this.cache.set('info', info);
  }

  /** Forget everything (after the daemon restarts it may have been upgraded or reconfigured). */
  invalidate(): void {
    this.cache.flushAll();
  }

  close(): void {
    this.cache.close();
  }
}

function runtimeNames(info: DockerInfo): string[] {
  return Object.keys(info.Runtimes ?? {}).sort();
}
