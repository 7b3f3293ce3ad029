// Offline test images, built from what this machine has (no registry is reachable):
// - busybox: Debian's busybox (the dynamically linked one with its libraries, or busybox-static
//   alone, whichever package the machine has), one hard link per applet
//   (so `sh` execs applets as separate programs, as real busybox images do), a PATH, and
//   /etc/passwd with root, a test user (1234) and nobody.
// - pause: test/fixtures/pause/pause.c built with `gcc -static`.
// Both are imported as single-layer images tagged by a hash of their inputs, so they are built
// once per machine and rebuilt only when an input changes.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Dockerode from 'dockerode';

const BUILDER_VERSION = '1';
const BUSYBOX = '/bin/busybox';
const PAUSE_SOURCE = path.resolve(__dirname, '../../../test/fixtures/pause/pause.c');

function hashOf(...inputs: Array<string | Buffer>): string {
  const h = createHash('sha256').update(BUILDER_VERSION);
  for (const input of inputs) h.update(input);
  return h.digest('hex').slice(0, 12);
}

function busyboxTag(): string {
  if (!fs.existsSync(BUSYBOX)) {
    throw new Error(`${BUSYBOX} is missing: install Debian's busybox package (scripts/setup.sh does)`);
  }
  return `cri-docker-shim-test/busybox:${hashOf(fs.readFileSync(BUSYBOX))}`;
}

function pauseTag(): string {
  return `cri-docker-shim-test/pause:${hashOf(fs.readFileSync(PAUSE_SOURCE))}`;
}

/** Image references the tests use; computed from the inputs, so stable across processes. */
export const TEST_BUSYBOX_IMAGE = busyboxTag();
export const TEST_PAUSE_IMAGE = pauseTag();

/** The uid/gid of the non-root user baked into the busybox image. */
export const TEST_USER = { name: 'tester', uid: 1234, gid: 1234 };

export function dockerApi(): Dockerode {
  return new Dockerode({ socketPath: process.env.TEST_DOCKER_SOCKET ?? '/var/run/docker.sock' });
}

async function imageExists(docker: Dockerode, ref: string): Promise<boolean> {
  try {
    await docker.getImage(ref).inspect();
    return true;
  } catch {
    return false;
  }
}

/** Imports the directory `rootfs` as a one-layer image (hard links survive in the layer tar). */
async function importRootfs(docker: Dockerode, rootfs: string, ref: string, changes: string[]): Promise<void> {
  const [repo, tag] = ref.split(':') as [string, string];
  const tar = spawn('tar', ['-C', rootfs, '--numeric-owner', '-cf', '-', '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const stream = (await docker.importImage(tar.stdout as unknown as string, { repo, tag, changes } as object)) as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(stream, (err: Error | null, out: Array<{ error?: string }>) => {
      const failed = out?.find((m) => m.error);
      if (err || failed) reject(err ?? new Error(failed!.error));
      else resolve();
    });
  });
}

/**
 * The shared libraries a dynamically linked binary loads; none for a static one (Debian's
 * busybox-static), which `ldd` refuses with "not a dynamic executable".
 */
export function libraryPaths(binary: string): string[] {
  const ldd = spawnSync('ldd', [binary], { encoding: 'utf8' });
  if (ldd.status !== 0 && /not a dynamic executable/.test(`${ldd.stdout}${ldd.stderr}`)) return [];
  if (ldd.status !== 0) throw new Error(`ldd ${binary} failed: ${ldd.stderr.trim()}`);
  const out = ldd.stdout;
  const paths: string[] = [];
  for (const line of out.split('\n')) {
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (m) paths.push(m[1]!);
  }
  return paths;
}

/** The busybox image's root: `busybox` (either Debian package's binary) and what it needs. */
export function buildBusyboxRootfs(dir: string, busybox: string = BUSYBOX): void {
  const put = (rel: string, src: string): void => {
    const dest = path.join(dir, rel);
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.copyFileSync(fs.realpathSync(src), dest);
  };
  put('bin/busybox', busybox);
  fs.chmodSync(path.join(dir, 'bin/busybox'), 0o755);
  for (const lib of libraryPaths(busybox)) put(lib.slice(1), lib);
  const applets = execFileSync(busybox, ['--list-full'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  for (const applet of applets) {
    const dest = path.join(dir, applet);
    if (fs.existsSync(dest)) continue;
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.linkSync(path.join(dir, 'bin/busybox'), dest);
  }
  fs.mkdirSync(path.join(dir, 'etc'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'etc/passwd'),
    `root:x:0:0:root:/root:/bin/sh\n${TEST_USER.name}:x:${TEST_USER.uid}:${TEST_USER.gid}:test user:/home/${TEST_USER.name}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n`,
  );
  fs.writeFileSync(path.join(dir, 'etc/group'), `root:x:0:\n${TEST_USER.name}:x:${TEST_USER.gid}:\nnogroup:x:65534:\n`);
  for (const d of ['tmp', 'root', `home/${TEST_USER.name}`, 'proc', 'sys', 'dev', 'var/log']) {
    fs.mkdirSync(path.join(dir, d), { recursive: true });
  }
  fs.chmodSync(path.join(dir, 'tmp'), 0o1777);
}

function buildPauseRootfs(dir: string): void {
  execFileSync('gcc', ['-static', '-O2', '-Wall', '-Werror', '-o', path.join(dir, 'pause'), PAUSE_SOURCE]);
}

export async function ensureImage(docker: Dockerode, ref: string, build: (dir: string) => void, changes: string[]): Promise<void> {
  if (await imageExists(docker, ref)) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-rootfs-'));
  try {
    build(dir);
    await importRootfs(docker, dir, ref, changes);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Builds the test images if this Docker does not have them yet. Safe to call from every test file. */
export async function ensureTestImages(docker: Dockerode = dockerApi()): Promise<void> {
  await ensureImage(docker, TEST_BUSYBOX_IMAGE, buildBusyboxRootfs, [
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    'CMD ["sh"]',
  ]);
  await ensureImage(docker, TEST_PAUSE_IMAGE, buildPauseRootfs, ['ENTRYPOINT ["/pause"]']);
}
