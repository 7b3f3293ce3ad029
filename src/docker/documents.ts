// Readings of Docker documents whose shape differs between the engines the shim supports (API
// 1.41 to 1.51, docs/docker-api.md): each field that moved or went away is read in one place,
// here, so every caller sees both shapes alike. Pure.
import * as path from 'node:path';
import type { ContainerInspect, DockerInfo } from './types';

/**
 * The container's writable layer directory (overlay2's `UpperDir`), or undefined where Docker
 * does not name one: a graph driver that has none (vfs), Docker's containerd image store
 * (`GraphDriver.Data` null up to API 1.51, `GraphDriver` left out from 1.52), a dead container.
 */
export function writableLayerDir(inspect: Pick<ContainerInspect, 'GraphDriver'>): string | undefined {
  const data: unknown = (inspect.GraphDriver as { Data?: unknown } | null | undefined)?.Data;
  if (typeof data !== 'object' || data === null) return undefined;
  const upper = (data as Record<string, unknown>).UpperDir;
  // Docker names it by absolute path; anything else is not a directory we could read.
  return typeof upper === 'string' && upper.startsWith('/') ? upper : undefined;
}

/**
 * Where the engine keeps images and containers' layers: a graph driver (overlay2 and the like,
 * with its layer database under <root>/image/<driver>), or containerd's image store (Docker 29's
 * default for new installs, "containerd-snapshotter" on 24 to 28), whose layers are snapshots of
 * containerd's snapshotter and whose images are content-addressed blobs in containerd's content
 * store. `docker info` tells them apart by DriverStatus's "driver-type".
 */
export type ImageStoreKind = 'graphdriver' | 'containerd';

/** Which store `info` describes (DriverStatus's "driver-type" names containerd's snapshotter). */
export function imageStoreKindOf(info: Pick<DockerInfo, 'DriverStatus'>): ImageStoreKind {
  const containerd = (info.DriverStatus ?? []).some((pair) => Array.isArray(pair) && pair[0] === 'driver-type' && pair[1] === 'io.containerd.snapshotter.v1');
  return containerd ? 'containerd' : 'graphdriver';
}

export interface ImageStoreLayout {
  kind: ImageStoreKind;
  /** The directory the layers are in, on the filesystem ImageFsInfo names: <root>/<driver>, or the snapshotter's root. */
  mountpoint: string;
  /** containerd's root (its content store, metadata and snapshotters are below it); '' on a graph driver. */
  containerdRoot: string;
}

/** containerd's root when dockerd runs its own containerd: <DockerRootDir>/containerd/daemon. */
function managedContainerdRoot(dockerRoot: string): string {
  return path.join(dockerRoot, 'containerd', 'daemon');
}

/** containerd's root when dockerd uses the system's containerd (docker-ce's packages). */
export const SYSTEM_CONTAINERD_ROOT = '/var/lib/containerd';

/**
 * The store `info` describes; undefined when Docker names no root or driver (or an odd one).
 * On the containerd store the snapshots are under the containerd dockerd runs itself, or the
 * system's: the first root where `exists` finds the snapshotter's directory (the managed one's
 * when neither has it yet).
 */
export function imageStoreOf(info: Pick<DockerInfo, 'DockerRootDir' | 'Driver' | 'DriverStatus'>, exists: (dir: string) => boolean): ImageStoreLayout | undefined {
  const root = info.DockerRootDir ?? '';
  const driver = info.Driver ?? '';
  if (!root.startsWith('/') || !/^[\w.-]+$/.test(driver)) return undefined;
  if (imageStoreKindOf(info) === 'graphdriver') return { kind: 'graphdriver', mountpoint: path.join(root, driver), containerdRoot: '' };
  const snapshotter = `io.containerd.snapshotter.v1.${driver}`;
  const roots = [managedContainerdRoot(root), SYSTEM_CONTAINERD_ROOT];
  const containerdRoot = roots.find((r) => exists(path.join(r, snapshotter))) ?? roots[0]!;
  return { kind: 'containerd', mountpoint: path.join(containerdRoot, snapshotter), containerdRoot };
}

/** containerd's content store (the images' blobs: manifests, configs, compressed layers) under its root. */
export function containerdContentDir(containerdRoot: string): string {
  return path.join(containerdRoot, 'io.containerd.content.v1.content');
}

/** containerd's metadata database directory under its root. */
export function containerdMetadataDir(containerdRoot: string): string {
  return path.join(containerdRoot, 'io.containerd.metadata.v1.bolt');
}

/** The part of NetworkSettings addresses are read from; the top-level fields are API 1.21's, deprecated since. */
export interface NetworkSettingsLike {
  IPAddress?: string;
  GlobalIPv6Address?: string;
  Networks?: Record<string, { IPAddress?: string; GlobalIPv6Address?: string }> | null;
}

/**
 * A container's addresses: primary IPv4 first, then any other Docker reports, without
 * duplicates. The top-level IPAddress and GlobalIPv6Address (the default network's, given up to
 * API 1.51, left out from 1.52) only order them: every address is in Networks too.
 */
export function ipsFromNetworkSettings(settings: NetworkSettingsLike | null | undefined): string[] {
  if (!settings) return [];
  const ips: string[] = [];
  const add = (ip: string | undefined): void => {
    if (ip && !ips.includes(ip)) ips.push(ip);
  };
  const networks = Object.values(settings.Networks ?? {});
  add(settings.IPAddress);
  for (const net of networks) add(net.IPAddress);
  add(settings.GlobalIPv6Address);
  for (const net of networks) add(net.GlobalIPv6Address);
  return ips;
}
