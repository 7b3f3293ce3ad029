// The offline test images build from either of Debian's busybox packages. This machine has one
// of them installed; setup.sh unpacks busybox-static's binary into a cache (without installing
// it), and this test builds the busybox image from that static binary and runs it: `ldd` cannot
// read a static binary, which once stopped the build on machines with busybox-static.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import { after, describe, it } from 'node:test';
import { buildBusyboxRootfs, dockerApi, ensureImage, libraryPaths, TEST_USER } from '../support/images';

const STATIC_BUSYBOX = '/var/cache/cri-docker-shim/busybox-static/bin/busybox';
const REF = `cri-docker-shim-test/busybox-static:${process.pid}`;

describe('test images', () => {
  after(async () => {
    await dockerApi().getImage(REF).remove({ force: true }).catch(() => undefined);
  });

  it('build from busybox-static’s binary and run shell, applets and the test user', async (t) => {
    if (!fs.existsSync(STATIC_BUSYBOX)) {
      const why = `${STATIC_BUSYBOX} is missing (scripts/setup.sh unpacks it from Debian's busybox-static)`;
      console.log(`# skipped: ${why}`);
      t.skip(why);
      return;
    }
    assert.deepEqual(libraryPaths(STATIC_BUSYBOX), [], 'a static binary needs no libraries');
    const docker = dockerApi();
    await ensureImage(docker, REF, (dir) => buildBusyboxRootfs(dir, STATIC_BUSYBOX), ['ENV PATH=/bin:/sbin:/usr/bin:/usr/sbin', 'CMD ["sh"]']);
    const container = await docker.createContainer({ Image: REF, Cmd: ['sh', '-c', `echo one two three | wc -w; id -u ${TEST_USER.name}; ls /lib 2>/dev/null | wc -l`] });
    try {
      await container.start();
      const { StatusCode } = (await container.wait()) as { StatusCode: number };
      const raw = (await container.logs({ stdout: true, stderr: true })) as Buffer;
      // Docker's multiplexed log: an 8-byte header before each chunk.
      let out = '';
      for (let i = 0; i + 8 <= raw.length; i += 8 + raw.readUInt32BE(i + 4)) out += raw.subarray(i + 8, i + 8 + raw.readUInt32BE(i + 4)).toString();
      assert.equal(StatusCode, 0, out);
      assert.deepEqual(out.trim().split('\n').map((l) => l.trim()), ['3', String(TEST_USER.uid), '0']);
    } finally {
      await container.remove({ force: true });
    }
  });
});
