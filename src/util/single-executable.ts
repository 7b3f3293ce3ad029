// The shim as one executable file (scripts/package.mjs): a copy of node with the shim injected as
// a single executable application. It carries what the build leaves beside main.js as assets,
// since such a program reads no files of its own: the one-file bundle, its V8 code cache and the
// static pause and port-relay programs. Its main script is main.js bundled with what main.js
// imports.
import type * as Sea from 'node:sea';

/** The bundle and its code cache, beside main.js in dist/src (the launcher runs them). */
export const BUNDLE_FILE = 'cli.bundle.js';
export const CODE_CACHE_FILE = 'cli.bundle.cache';

/** The assets' names, as scripts/package.mjs stores them. */
export const SEA_ASSETS = { bundle: BUNDLE_FILE, codeCache: CODE_CACHE_FILE, pause: 'pause', portRelay: 'port-relay' } as const;

/** node:sea when this process is the single executable, else undefined. */
export function singleExecutable(): typeof Sea | undefined {
  const sea = require('node:sea') as typeof Sea;
  return sea.isSea() ? sea : undefined;
}

/** An asset's bytes (a view on the executable's own memory, not a copy). */
export function assetBytes(sea: typeof Sea, key: string): Buffer {
  return Buffer.from(sea.getRawAsset(key) as ArrayBuffer);
}
