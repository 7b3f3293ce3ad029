// The offline test images build from either of Debian's busybox packages. Here the busybox image
// is built from a statically linked busybox (busybox-static's), as on a machine that has that
// package instead of `busybox`: it must build without `ldd` (which fails on a static binary),
// run, and behave like the image this machine's own busybox gives. What is installed is left
// alone; the static binary is the host's, or unpacked from the package into a cache
// (test/support/busybox-static.ts; scripts/setup.sh does it too).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { newTestRun, removeTestContainers, testLabels } from '../support/cleanup';
import { staticBusybox } from '../support/busybox-static';
import { elfInterpreter } from '../support/elf';
import { dockerApi, ensureBusyboxImage, ensureTestImages, TEST_BUSYBOX_BINARY, TEST_BUSYBOX_IMAGE, TEST_USER } from '../support/images';

/** Applets the suite's containers run; both images must have each as a program on PATH. */
const SUITE_APPLETS = [
  'cat', 'dd', 'env', 'find', 'grep', 'head', 'hostname', 'httpd', 'id', 'ip', 'kill', 'ls', 'mkdir', 'mount', 'nc',
  'ps', 'readlink', 'rm', 'sed', 'seq', 'sh', 'sleep', 'stat', 'tail', 'touch', 'tr', 'true', 'usleep', 'wc', 'wget',
];

describe('a busybox test image built from a static busybox', () => {
  const run = newTestRun();
  const docker = dockerApi();
  let skip: string | undefined;
  let binary = '';
  let image = '';

  /** Runs `cmd` in a fresh container of `ref` and returns its exit code, stdout and stderr. */
  async function runIn(ref: string, cmd: string[], user = ''): Promise<{ code: number; out: string; err: string }> {
    const container = await docker.createContainer({ Image: ref, Cmd: cmd, User: user, Labels: testLabels(run) });
    try {
      await container.start();
      const { StatusCode } = (await container.wait()) as { StatusCode: number };
      const raw = (await container.logs({ stdout: true, stderr: true })) as Buffer;
      const streams = { 1: '', 2: '' } as Record<number, string>;
      // Docker's multiplexed log format: an 8-byte header (stream, size) before each chunk.
      for (let i = 0; i + 8 <= raw.length; i += 8 + raw.readUInt32BE(i + 4)) {
        streams[raw[i]!] += raw.subarray(i + 8, i + 8 + raw.readUInt32BE(i + 4)).toString('utf8');
      }
      return { code: StatusCode, out: streams[1]!, err: streams[2]! };
    } finally {
      await container.remove({ force: true });
    }
  }

  before(async () => {
    const found = await staticBusybox();
    if (found.skip !== undefined) {
      skip = found.skip;
      console.log(`# skipping the static busybox image tests: ${skip}`);
      return;
    }
    binary = found.binary;
    console.log(`# static busybox: ${binary} (${found.origin})`);
    await ensureTestImages(docker);
    // Tagged for this run alone: it is always built here (never found from an earlier run), and
    // removing it touches neither the shared test image nor a concurrent run's.
    image = `cri-docker-shim-test/busybox-static-check:${run}`;
    await ensureBusyboxImage(docker, binary, image);
  });

  after(async () => {
    await removeTestContainers({ run });
    if (image) await docker.getImage(image).remove({ force: true }).catch(() => undefined);
  });

  it('is built from a binary that names no program interpreter, and holds no shared library', async (t) => {
    if (skip) return t.skip(skip);
    assert.equal(elfInterpreter(fs.readFileSync(binary)), null);
    const libs = await runIn(image, ['find', '/', '-xdev', '-name', '*.so*']);
    assert.equal(libs.code, 0, libs.err);
    assert.equal(libs.out, '');
    // The normal image, built from this machine's busybox, carries its libraries when it has any.
    if (elfInterpreter(fs.readFileSync(TEST_BUSYBOX_BINARY)) !== null) {
      const normal = await runIn(TEST_BUSYBOX_IMAGE, ['find', '/', '-xdev', '-name', '*.so*']);
      assert.match(normal.out, /libc\.so/);
    }
  });

  it('runs sh -c and an applet (a hard link to /bin/busybox), and knows the test user', async (t) => {
    if (skip) return t.skip(skip);
    const counted = await runIn(image, ['sh', '-c', 'echo one two three | wc -w; stat -c %i /bin/busybox "$(which wc)"']);
    assert.equal(counted.code, 0, counted.err);
    const [words, busyboxInode, wcInode] = counted.out.trim().split('\n');
    assert.equal(words, '3');
    assert.equal(wcInode, busyboxInode, 'wc is a hard link to /bin/busybox');

    const expected = `uid=${TEST_USER.uid}(${TEST_USER.name}) gid=${TEST_USER.gid}(${TEST_USER.name}) groups=${TEST_USER.gid}(${TEST_USER.name})`;
    for (const user of [String(TEST_USER.uid), TEST_USER.name]) {
      const id = await runIn(image, ['id'], user);
      assert.equal(id.code, 0, id.err);
      assert.equal(id.out.trim(), expected, `id as ${user}`);
    }
  });

  it('links every applet its binary lists', async (t) => {
    if (skip) return t.skip(skip);
    const unlinked = await runIn(image, [
      'sh',
      '-c',
      'ino=$(stat -c %i /bin/busybox); n=0; for a in $(busybox --list-full); do n=$((n+1)); ' +
        '[ "$(stat -c %i "/$a" 2>/dev/null)" = "$ino" ] || echo "unlinked: /$a"; done; echo "applets: $n"',
    ]);
    assert.equal(unlinked.code, 0, unlinked.err);
    const lines = unlinked.out.trim().split('\n');
    assert.deepEqual(lines.slice(0, -1), []);
    assert.ok(Number(/^applets: (\d+)$/.exec(lines.at(-1)!)?.[1]) > 200, lines.at(-1));
  });

  it('behaves like the image built from this machine’s busybox', async (t) => {
    if (skip) return t.skip(skip);
    const probe = [
      'echo "PATH=$PATH"',
      'cat /etc/passwd /etc/group',
      'id; id tester; id nobody',
      'stat -c "%a %u:%g %n" /tmp /root /home/tester /var/log',
      'echo one two three | wc -w',
      // `which`, not `command -v`: busybox-static's shell answers the latter with the bare applet
      // name, as it runs applets itself (see test/support/images.ts); PATH lookups agree.
      `for a in ${SUITE_APPLETS.join(' ')}; do which "$a" || echo "missing $a"; done`,
    ].join('; ');
    const [fromStatic, fromHost] = await Promise.all([image, TEST_BUSYBOX_IMAGE].map((ref) => runIn(ref, ['sh', '-c', probe])));
    assert.equal(fromStatic!.code, 0, fromStatic!.err);
    assert.equal(fromHost!.code, 0, fromHost!.err);
    assert.doesNotMatch(fromStatic!.out, /missing/);
    assert.equal(fromStatic!.out, fromHost!.out);

    const [a, b] = await Promise.all([image, TEST_BUSYBOX_IMAGE].map((ref) => docker.getImage(ref).inspect()));
    assert.deepEqual(a!.Config.Env, b!.Config.Env);
    assert.deepEqual(a!.Config.Cmd, b!.Config.Cmd);
  });
});
