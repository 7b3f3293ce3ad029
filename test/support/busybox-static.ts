// A statically linked busybox for the test that builds the busybox image from one, on a machine
// that may have Debian's dynamic `busybox` installed. The two packages conflict in dpkg (both
// ship /bin/busybox), and the installed one is the owner's choice, so the other is never
// installed: scripts/setup.sh unpacks busybox-static's .deb into STATIC_BUSYBOX_CACHE, and when
// it has not (it was not run as root, or the archive was unreachable then) this fetches and
// unpacks it the same way, once per machine.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { elfInterpreter } from './elf';

const run = promisify(execFile);

const HOST_BUSYBOX = '/bin/busybox';
const PACKAGE = 'busybox-static';
/** Where the package is unpacked (scripts/setup.sh uses the same place). */
export const STATIC_BUSYBOX_CACHE = path.join(process.env.CDS_TEST_CACHE_DIR ?? '/var/cache/cri-docker-shim', PACKAGE);

export type StaticBusybox =
  | { binary: string; origin: 'host' | 'cache' | 'download'; skip?: undefined }
  | { skip: string };

function isStaticElf(file: string): boolean {
  try {
    return elfInterpreter(fs.readFileSync(file)) === null;
  } catch {
    return false; // missing, or not an executable at all (a torn copy): not usable
  }
}

/**
 * A static busybox binary: the host's own when busybox-static is what is installed, else the
 * unpacked one in the cache, else one fetched now from Debian's archive. `skip` says why there is
 * none; the only such case is a download that fails (archive unreachable, no package lists).
 */
export async function staticBusybox(): Promise<StaticBusybox> {
  if (isStaticElf(HOST_BUSYBOX)) return { binary: HOST_BUSYBOX, origin: 'host' };
  const cached = path.join(STATIC_BUSYBOX_CACHE, 'bin/busybox');
  if (isStaticElf(cached)) return { binary: cached, origin: 'cache' };

  const parent = path.dirname(STATIC_BUSYBOX_CACHE);
  fs.mkdirSync(parent, { recursive: true });
  // Unpacked beside the cache and renamed into place, so an interrupted or concurrent fetch
  // never leaves a half-written tree that a later run would take for a good one.
  const work = fs.mkdtempSync(path.join(parent, `.${PACKAGE}-`));
  try {
    try {
      // apt's own time-outs, so an unreachable archive fails in seconds rather than minutes.
      await run('apt-get', ['download', '-q', '-o', 'Acquire::Retries=0', '-o', 'Acquire::http::Timeout=20', PACKAGE], {
        cwd: work,
        timeout: 120_000,
      });
    } catch (err) {
      // apt's errors (E: lines) say why; its warnings (about its sandbox user, as root) do not.
      const lines = ((err as { stderr?: string }).stderr || (err as Error).message).trim().split('\n');
      const detail = (lines.filter((l) => l.startsWith('E:')).join(' ') || lines.at(-1))!.trim();
      return { skip: `cannot download ${PACKAGE} from the Debian archive: ${detail}` };
    }
    const deb = fs.readdirSync(work).find((f) => f.startsWith(`${PACKAGE}_`) && f.endsWith('.deb'));
    if (!deb) throw new Error(`apt-get download ${PACKAGE} left no .deb in ${work}`);
    const tree = path.join(work, 'tree');
    await run('dpkg-deb', ['-x', path.join(work, deb), tree]);
    // bin/busybox in bookworm's package; a /usr-merged layout would put it under usr/bin.
    const found = ['bin/busybox', 'usr/bin/busybox'].map((p) => path.join(tree, p)).find((p) => fs.existsSync(p));
    if (!found) throw new Error(`${deb} has no bin/busybox`);
    if (!isStaticElf(found)) throw new Error(`the busybox in ${deb} is not a static executable`);
    if (found !== path.join(tree, 'bin/busybox')) {
      fs.mkdirSync(path.join(tree, 'bin'), { recursive: true });
      fs.renameSync(found, path.join(tree, 'bin/busybox'));
    }
    fs.rmSync(STATIC_BUSYBOX_CACHE, { recursive: true, force: true }); // a torn copy, if any
    try {
      fs.renameSync(tree, STATIC_BUSYBOX_CACHE);
    } catch (err) {
      // Another process unpacked it meanwhile; its copy is as good as this one.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    }
    return { binary: cached, origin: 'download' };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
