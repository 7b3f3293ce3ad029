// Offline test images, built from what this machine has (no registry is reachable):
// - busybox: the host's /bin/busybox from whichever Debian package the machine has (`busybox`,
//   dynamically linked, with its libraries; or `busybox-static`, alone), one hard link per
//   applet (so `sh` execs applets as separate programs, as real busybox images do), a PATH,
//   and /etc/passwd with root, a test user (1234) and nobody.
// - pause: the shim's own src/pause/pause.c built with `gcc -static`.
// Both are imported as single-layer images tagged by a hash of their inputs, so they are built
// once per machine and rebuilt only when an input changes.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Dockerode from 'dockerode';
import { imageStoreOf, type ImageStoreLayout } from '../../src/docker/documents';
import type { DockerInfo } from '../../src/docker/types';
import { elfInterpreter } from './elf';

const BUILDER_VERSION = '1';
/**
 * The busybox the test image is built from: the host's, or another one named by CDS_TEST_BUSYBOX
 * (e.g. busybox-static's unpacked binary, to run the suite as on a machine that has that package).
 */
export const TEST_BUSYBOX_BINARY = process.env.CDS_TEST_BUSYBOX || '/bin/busybox';
const PAUSE_SOURCE = path.resolve(__dirname, '../../../src/pause/pause.c');

function hashOf(...inputs: Array<string | Buffer>): string {
  const h = createHash('sha256').update(BUILDER_VERSION);
  for (const input of inputs) h.update(input);
  return h.digest('hex').slice(0, 12);
}

/** The tag of the busybox image built from `binary`: keyed by its content, so built once. */
function busyboxImageRef(binary: string): string {
  if (!fs.existsSync(binary)) {
    throw new Error(`${binary} is missing: install Debian's busybox or busybox-static package (scripts/setup.sh does)`);
  }
  return `cri-docker-shim-test/busybox:${hashOf(fs.readFileSync(binary))}`;
}

function pauseTag(): string {
  return `cri-docker-shim-test/pause:${hashOf(fs.readFileSync(PAUSE_SOURCE))}`;
}

/** Image references the tests use; computed from the inputs, so stable across processes. */
export const TEST_BUSYBOX_IMAGE = busyboxImageRef(TEST_BUSYBOX_BINARY);
export const TEST_PAUSE_IMAGE = pauseTag();

/** The uid/gid of the non-root user baked into the busybox image. */
export const TEST_USER = { name: 'tester', uid: 1234, gid: 1234 };

/**
 * The socket of the Docker the tests use: TEST_DOCKER_SOCKET, else DOCKER_HOST's unix socket
 * (the one the shim under test takes too), else the machine's default.
 */
export function testDockerSocket(): string {
  const host = process.env.DOCKER_HOST ?? '';
  return process.env.TEST_DOCKER_SOCKET ?? (host.startsWith('unix://') ? host.slice('unix://'.length) : '/var/run/docker.sock');
}

export function dockerApi(): Dockerode {
  return new Dockerode({ socketPath: testDockerSocket() });
}

/** The test Docker's image store and where its layers are (src/docker/documents.ts's reading of its info). */
export async function testImageStore(): Promise<ImageStoreLayout> {
  const info = (await dockerApi().info()) as DockerInfo;
  const layout = imageStoreOf(info, (dir) => fs.existsSync(dir));
  if (!layout) throw new Error(`Docker names no storage: root ${info.DockerRootDir}, driver ${info.Driver}`);
  return layout;
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
 * The shared libraries a binary loads. A static one (it names no program interpreter) loads
 * none, and `ldd` is not asked about it: it fails on static binaries.
 */
function libraryPaths(binary: string): string[] {
  if (elfInterpreter(fs.readFileSync(binary)) === null) return [];
  const out = execFileSync('ldd', [binary], { encoding: 'utf8' });
  const paths: string[] = [];
  for (const line of out.split('\n')) {
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (m) paths.push(m[1]!);
  }
  return paths;
}

// The image takes the busybox the machine's owner installed, as it is, rather than fetching the
// other package's binary: it then needs nothing but this machine (the tests run offline, and a
// download at build time would be one more way for every test run to fail), and it runs the
// busybox the owner chose. A static binary is self-contained, so copied alone it is the simplest
// case; a dynamic one brings the libraries `ldd` lists. Nothing else in the image depends on the
// linkage: the applet links, /etc, the directories and the config (BUSYBOX_CONFIG) are the same.
// What does differ is compiled into the binaries. Debian builds the two packages with slightly
// different applet sets (1.35: blkid only in busybox; crond, dpkg, ed, passwd, su, tc, telnetd
// and a few more only in busybox-static), so each image links the applets its binary lists; the
// tests use none of those. And busybox-static's shell prefers its own applets to PATH (its
// `command -v cat` says `cat`, not /bin/cat): it runs them by re-executing itself, or in a fork
// without exec, instead of exec'ing the hard link. The suite passes on either image
// (CDS_TEST_BUSYBOX selects the binary).
/** The busybox image's root: `busybox` (either Debian package's binary) and what it needs. */
function buildBusyboxRootfs(dir: string, busybox: string): void {
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

async function ensureImage(docker: Dockerode, ref: string, build: (dir: string) => void, changes: string[]): Promise<void> {
  if (await imageExists(docker, ref)) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-rootfs-'));
  try {
    build(dir);
    await importRootfs(docker, dir, ref, changes);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const BUSYBOX_CONFIG = ['ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'CMD ["sh"]'];

/** Builds the busybox image from `binary` as `ref`, unless this Docker has `ref` already. */
export async function ensureBusyboxImage(docker: Dockerode, binary: string, ref: string): Promise<void> {
  await ensureImage(docker, ref, (dir) => buildBusyboxRootfs(dir, binary), BUSYBOX_CONFIG);
}

/** Builds the test images if this Docker does not have them yet. Safe to call from every test file. */
export async function ensureTestImages(docker: Dockerode = dockerApi()): Promise<void> {
  await ensureBusyboxImage(docker, TEST_BUSYBOX_BINARY, TEST_BUSYBOX_IMAGE);
  await ensureImage(docker, TEST_PAUSE_IMAGE, buildPauseRootfs, ['ENTRYPOINT ["/pause"]']);
}
