// Readings of Docker documents whose shape differs between the engines the shim supports (API
// 1.41 to 1.51, docs/docker-api.md): each field that moved or went away is read in one place,
// here, so every caller sees both shapes alike. Pure.
import type { ContainerInspect } from './types';

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
