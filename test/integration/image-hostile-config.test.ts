// What an image's config can make of a container (issue 42): its USER is reported to kubelet as
// Docker will run it, so runAsNonRoot cannot be passed by a user Docker resolves to root, and its
// HEALTHCHECK never runs (kubelet owns probes). Images are built offline: the test busybox image
// with a passwd of the test's own, committed from a container created with the hostile config.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { pack } from 'tar-stream';
import type { Image } from '../../src/cri/types';
import { testLabels } from '../support/cleanup';
import { useShim, type Fixture } from '../support/fixture';
import { dockerApi, TEST_BUSYBOX_IMAGE } from '../support/images';
import { busybox, runContainer, sh } from '../support/pods';

/** A one-file tar of /etc/passwd with these lines. */
function passwdTar(lines: string[]): Promise<Buffer> {
  const tar = pack();
  tar.entry({ name: 'passwd', mode: 0o644 }, `${lines.join('\n')}\n`);
  tar.finalize();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    tar.on('data', (c: unknown) => chunks.push(c as Buffer));
    tar.on('end', () => resolve(Buffer.concat(chunks)));
    tar.on('error', reject);
  });
}

/** Builds `ref` from the test busybox image with `config` and an /etc/passwd of `passwd`. */
async function buildImage(f: Fixture, ref: string, config: { User?: string; Healthcheck?: object }, passwd: string[]): Promise<void> {
  const docker = dockerApi();
  f.removeImagesAfter([ref], { force: true });
  const base = await docker.createContainer({ Image: TEST_BUSYBOX_IMAGE, Cmd: ['sleep', '3600'], Labels: testLabels(f.run), ...config });
  try {
    await base.putArchive(await passwdTar(['root:x:0:0:root:/root:/bin/sh', ...passwd]), { path: '/etc' });
    const [repo, tag] = ref.split(':');
    await base.commit({ repo, tag });
  } finally {
    await base.remove({ force: true });
  }
}

/** What kubelet decides under runAsNonRoot from ImageStatus (kuberuntime's getImageUser and verifyRunAsNonRoot). */
function kubeletAdmitsNonRoot(image: Image): boolean {
  // A name cannot be verified; no user at all is root.
  return image.uid !== null && image.uid !== undefined && image.uid.value !== '0';
}

describe("an image's USER", () => {
  const f = useShim({ pod: 'image-users' });
  // Each USER with a passwd line that makes Docker run it as root where it can, and the uid
  // Docker runs it as when kubelet passes no run_as_user (as crictl runs it): Docker 20.10 runs
  // the three numbers past 2^31 as root, Docker 29 refuses to start them ("refused").
  const hostile = [
    { what: 'a uid followed by a zero-width character', user: '1000\uFEFF', passwd: ['1000\uFEFF:x:0:0::/:/bin/sh'], runsAs: '0' },
    { what: 'a uid of 2^64 + 1000 (int64 wraps it to 1000)', user: '18446744073709552616', passwd: ['18446744073709552616:x:0:0::/:/bin/sh'], runsAs: '0|refused' },
    { what: 'a uid of 2^63 (negative as an int64)', user: '9223372036854775808', passwd: ['9223372036854775808:x:0:0::/:/bin/sh'], runsAs: '0|refused' },
    { what: 'a uid of 2^32 with a passwd line of that uid (cut to 32 bits)', user: '4294967296', passwd: ['big:x:4294967296:0::/:/bin/sh'], runsAs: '0|refused' },
    // Go's Atoi takes the sign, so Docker runs uid 1000; a name to kubelet all the same.
    { what: 'a signed uid', user: '+1000', passwd: ['+1000:x:0:0::/:/bin/sh'], runsAs: '1000' },
  ];
  const images = new Map<string, string>();

  before(async () => {
    let i = 0;
    for (const h of [...hostile, { what: 'a plain uid', user: '1000:1000', passwd: [] }]) {
      const ref = `cds-test-user-${i++}:${f.run}`;
      await buildImage(f, ref, { User: h.user }, h.passwd);
      images.set(h.user, ref);
    }
  });

  /** ImageStatus's user, and the uid the container's process really has when Docker applies the image's user. */
  async function reportedAndReal(user: string, name: string): Promise<{ image: Image; uid: string }> {
    const ref = images.get(user)!;
    const { image } = await f.client.images.ImageStatus({ image: { image: ref } });
    assert.ok(image, `ImageStatus of ${ref}`);
    assert.equal((await dockerApi().getImage(ref).inspect()).Config.User, user, 'the image holds the USER as written');
    let id: string;
    try {
      id = await runContainer(f.client, f.pod, busybox(f.run, name, { image: { image: ref }, command: ['sleep', '3600'] }));
    } catch (err) {
      if (/uids and gids must be in range/.test((err as Error).message)) return { image, uid: 'refused' };
      throw err;
    }
    return { image, uid: (await sh(f.client, id, 'id -u')).trim() };
  }

  for (const [i, h] of hostile.entries()) {
    it(`${h.what}: reported as a user name, which kubelet refuses under runAsNonRoot`, async () => {
      const { image, uid } = await reportedAndReal(h.user, `hostile-${i}`);
      assert.deepEqual({ uid: image.uid, username: image.username }, { uid: null, username: h.user });
      assert.equal(kubeletAdmitsNonRoot(image), false);
      // Why it must be: Docker reads it as a name (or as a uid it cuts to 32 bits) and runs root.
      assert.ok(h.runsAs.split('|').includes(uid), `runs as ${uid}, expected ${h.runsAs}`);
    });
  }

  it('a plain numeric USER is reported as that uid, and the process runs as it', async () => {
    const { image, uid } = await reportedAndReal('1000:1000', 'plain');
    assert.deepEqual({ uid: image.uid, username: image.username }, { uid: { value: '1000' }, username: '' });
    assert.equal(kubeletAdmitsNonRoot(image), true);
    assert.equal(uid, '1000');
  });
});

describe("an image's HEALTHCHECK", () => {
  const f = useShim({ pod: 'healthcheck' });

  it('never runs: Docker has the health check of every container the shim made off', async () => {
    const ref = `cds-test-healthcheck:${f.run}`;
    // Every millisecond, the shortest Docker takes; the command leaves a mark each time it runs.
    await buildImage(f, ref, { Healthcheck: { Test: ['CMD-SHELL', 'echo ran >> /tmp/health'], Interval: 1_000_000, StartPeriod: 0 } }, []);
    assert.deepEqual((await dockerApi().getImage(ref).inspect()).Config.Healthcheck?.Test, ['CMD-SHELL', 'echo ran >> /tmp/health']);
    const id = await runContainer(f.client, f.pod, busybox(f.run, 'checked', { image: { image: ref }, command: ['sleep', '3600'] }));
    for (const made of [id, f.pod.id]) {
      const inspected = await dockerApi().getContainer(made).inspect();
      assert.deepEqual(inspected.Config.Healthcheck?.Test, ['NONE'], `${made}: health check off`);
      assert.equal(inspected.State.Health, undefined, `${made}: no health state`);
    }
    // Had it run, 1 ms apart, it would have left marks by the time this exec ran.
    assert.equal((await sh(f.client, id, 'cat /tmp/health 2>/dev/null; echo end')).trim(), 'end');
  });
});
