// Replaces a file whole or not at all: the text goes to a temporary file beside the target
// (a dot name, so directory readers that skip dot files never see it half-written), is synced
// to disk, and is renamed over the target. A crash at any point leaves the old file or the new.
// A full disk is a DiskFullError naming the directory (RESOURCE_EXHAUSTED), not a bare ENOSPC.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { diskFullOr } from '../errors';

/**
 * Writes `text` (or bytes) to `target` atomically, readable by its owner only (`mode`, default
 * 0600). Text in pieces is written piece by piece, so that a large file is never one string in
 * memory.
 */
export async function writeFileAtomic(target: string, text: string | Uint8Array | Iterable<string>, mode = 0o600): Promise<void> {
  try {
    await writeThenRename(target, text, mode);
  } catch (err) {
    throw diskFullOr(err, path.dirname(target));
  }
}

async function writeThenRename(target: string, text: string | Uint8Array | Iterable<string>, mode: number): Promise<void> {
  const temp = path.join(path.dirname(target), `.${path.basename(target)}.tmp-${randomBytes(6).toString('hex')}`);
  const file = await fs.open(temp, 'wx', mode);
  try {
    await fs.writeFile(file, text, 'utf8');
    await file.sync();
  } catch (err) {
    await file.close();
    await fs.rm(temp, { force: true });
    throw err;
  }
  await file.close();
  try {
    await fs.rename(temp, target);
  } catch (err) {
    await fs.rm(temp, { force: true });
    throw err;
  }
}
