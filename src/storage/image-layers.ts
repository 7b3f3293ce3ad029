// Where Docker keeps an image's layers, and what its own accounting says each one takes. An
// image names its layers by diff ID (RootFS.Layers); Docker stores each under its chain ID
// (the digest of the layers below and itself), in the layer database
// <root>/image/<driver>/layerdb/sha256/<chain>/ with `size` (Docker's count of the layer's
// bytes) and `cache-id` (the layer's directory under <root>/<driver>). Images that share a
// base share its chain IDs, so counting chain IDs counts each layer once. Layers never change:
// a chain ID read once holds for good.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isFullId } from '../conventions/ids';

/** The chain IDs of an image's layers, bottom first, from their diff IDs ("sha256:<hex>"). */
export function chainIds(diffIds: readonly string[]): string[] {
  const out: string[] = [];
  for (const diffId of diffIds) {
    const below = out[out.length - 1];
    out.push(below === undefined ? diffId : `sha256:${createHash('sha256').update(`${below} ${diffId}`).digest('hex')}`);
  }
  return out;
}

export interface ImageLayer {
  /** Docker's count of the layer's bytes (the layer database's `size`). */
  dockerBytes: number;
  /** The layer's directory under <root>/<driver>. */
  dir: string;
}

/** The hex of a "sha256:<hex>" digest, or undefined when it is not one. */
function digestHex(digest: string): string | undefined {
  const hex = digest.startsWith('sha256:') ? digest.slice('sha256:'.length) : '';
  return isFullId(hex) ? hex : undefined;
}

/**
 * Reads one layer's record from Docker's layer database. Undefined when it is not there or not
 * of this shape (another storage driver, or Docker's containerd image store): the caller falls
 * back to the image sizes Docker reports. Names from Docker's files are checked before they
 * become paths.
 */
export function readImageLayer(root: string, driver: string, chainId: string): ImageLayer | undefined {
  const hex = digestHex(chainId);
  if (hex === undefined || !/^[\w.-]+$/.test(driver)) return undefined;
  const record = path.join(root, 'image', driver, 'layerdb', 'sha256', hex);
  try {
    const dockerBytes = Number(fs.readFileSync(path.join(record, 'size'), 'utf8').trim());
    const cacheId = fs.readFileSync(path.join(record, 'cache-id'), 'utf8').trim();
    if (!Number.isSafeInteger(dockerBytes) || dockerBytes < 0 || !/^[0-9a-zA-Z_-]{1,128}$/.test(cacheId)) return undefined;
    return { dockerBytes, dir: path.join(root, driver, cacheId) };
  } catch {
    return undefined;
  }
}
