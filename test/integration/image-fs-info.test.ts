// ImageFsInfo through the real shim on the real Docker: the figures, measured in the background
// (src/storage), agree with du over the trees they stand for, stay within df, and follow an
// image loaded and removed and a container writing to its layer, within the background's
// refresh (polled for, with deadlines). Other test files change Docker's storage meanwhile, so
// comparisons allow a small drift and movements are made large enough to stand out.
import { strict as assert } from 'node:assert';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';
import type { ImageFsInfoResponse } from '../../src/cri/types';
import { dockerApi, testImageStore } from '../support/images';
import { useShim } from '../support/fixture';
import { busybox, runContainer } from '../support/pods';
import { waitFor } from '../support/poll';
import { storageLog } from '../support/shim';
import { importUniqueImage } from '../support/registry';

const MiB = 1024 * 1024;
/** The background measures a running container's layer again after 10 s; room for the walks. */
const REFRESH_DEADLINE_MS = 45_000;

type Which = 'imageFilesystems' | 'containerFilesystems';
const bytesOf = (res: ImageFsInfoResponse, which: Which): number => Number(res[which]![0]!.usedBytes!.value);
const inodesOf = (res: ImageFsInfoResponse, which: Which): number => Number(res[which]![0]!.inodesUsed!.value);

/**
 * du's grand total. Other test files make and remove containers meanwhile, so a layer directory
 * can vanish while du walks: du then says so and exits 1, but its total is still printed and
 * still within the drift the test allows. Any other failure, or no total, throws.
 */
function duTotal(args: string[]): number {
  const r = spawnSync('du', args, { encoding: 'utf8' });
  const vanished = r.stderr.split('\n').every((l) => l === '' || /No such file or directory/.test(l));
  const total = /^(\d+)\ttotal$/m.exec(r.stdout);
  if (!total || (r.status !== 0 && !(r.status === 1 && vanished))) throw new Error(`du ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return Number(total[1]);
}

describe('ImageFsInfo', () => {
  const f = useShim({ pod: 'fsinfo' });
  const { run } = f;
  const docker = dockerApi();

  it('names the directory the layers are in, which exists and whose filesystem statfs measures', async () => {
    // A graph driver's <root>/<driver>; on the containerd store containerd's snapshotter
    // (<root>/containerd/daemon/io.containerd.snapshotter.v1.overlayfs), not <root>/overlayfs.
    const { mountpoint } = await testImageStore();
    const res = await f.client.images.ImageFsInfo({});
    assert.equal(res.imageFilesystems![0]!.fsId?.mountpoint, mountpoint);
    assert.equal(res.containerFilesystems![0]!.fsId?.mountpoint, mountpoint);
    assert.ok(fs.statSync(mountpoint).isDirectory(), `${mountpoint} is a directory`);
    const sfs = fs.statfsSync(mountpoint);
    assert.ok(sfs.blocks > 0 && sfs.files > 0, 'kubelet reads its capacity and inodes there');
  });

  it('names Docker\'s storage directory, and agrees with du over it and with df', async () => {
    const info = await docker.info();
    const layout = await testImageStore();
    const storage = layout.mountpoint;
    // What the figures stand for besides the layers: Docker's image metadata, or containerd's
    // content store and metadata database (the snapshotter's own database is in `storage`).
    const metadata = layout.kind === 'containerd' ? [`${layout.containerdRoot}/io.containerd.content.v1.content`, `${layout.containerdRoot}/io.containerd.metadata.v1.bolt`] : [`${info.DockerRootDir}/image`];
    // Once the background has measured what there is, the two figures together are what du
    // counts over Docker's storage and image metadata (containers of others aside).
    await waitFor(
      'ImageFsInfo within 5% of du',
      async () => {
        const res = await f.client.images.ImageFsInfo({});
        assert.equal(res.imageFilesystems![0]!.fsId?.mountpoint, storage);
        assert.equal(res.containerFilesystems![0]!.fsId?.mountpoint, storage);
        assert.ok(BigInt(res.imageFilesystems![0]!.timestamp!) > 0n);
        const bytes = bytesOf(res, 'imageFilesystems') + bytesOf(res, 'containerFilesystems');
        const inodes = inodesOf(res, 'imageFilesystems') + inodesOf(res, 'containerFilesystems');
        const duBytes = duTotal(['-sxcB1', storage, ...metadata]);
        const duInodes = duTotal(['-sxc', '--inodes', storage, ...metadata]);
        const [, used, , , iused] = execFileSync('df', ['-B1', '--output=source,used,size,itotal,iused', storage], { encoding: 'utf8' }).trim().split('\n')[1]!.trim().split(/\s+/);
        assert.ok(bytes <= Number(used), `bytes ${bytes} within df used ${used}`);
        assert.ok(inodes <= Number(iused), `inodes ${inodes} within df iused ${iused}`);
        return Math.abs(bytes - duBytes) <= duBytes * 0.05 && Math.abs(inodes - duInodes) <= duInodes * 0.05;
      },
      { timeoutMs: REFRESH_DEADLINE_MS, intervalMs: 1_000 },
    );
  });

  it('counts an image loaded, and no longer counts it once removed', async () => {
    // The figure is every image's: other test files pull, import and remove images meanwhile,
    // and the compose suites rebuild their images (new layers of tens of MiB) when the sources
    // changed. The image is large enough for its coming and going to stand out of that.
    const size = 256 * MiB;
    const slack = 96 * MiB;
    const before = bytesOf(await f.client.images.ImageFsInfo({}), 'imageFilesystems');
    const id = await importUniqueImage(`cds-test-fsinfo/${run}:big`, [], size);
    f.removeImagesAfter([id], { force: true });
    const grown = await waitFor(
      'the image to be counted',
      async () => {
        const now = bytesOf(await f.client.images.ImageFsInfo({}), 'imageFilesystems');
        return now >= before + size - slack ? now : undefined;
      },
      { timeoutMs: REFRESH_DEADLINE_MS, intervalMs: 250, explain: () => storageLog(f.shim) },
    );
    await docker.getImage(id).remove({ force: true });
    await waitFor(
      'the removed image to leave the figure',
      async () => bytesOf(await f.client.images.ImageFsInfo({}), 'imageFilesystems') <= grown - (size - slack),
      { timeoutMs: REFRESH_DEADLINE_MS, intervalMs: 250, explain: () => storageLog(f.shim) },
    );
  });

  it('counts an image pulled from a registry, its bytes and its files, on the filesystem it names', async (t) => {
    // 32 MiB of random bytes and 2,000 files: the blobs downloaded and the snapshot unpacked
    // (containerd store), or the layer (graph driver), all measured where ImageFsInfo says.
    const size = 32 * MiB;
    const files = 2_000;
    const registry = await f.startRegistry();
    const local = `cds-test-fsinfo/${run}:pulled`;
    const id = await importUniqueImage(local, [], size, files);
    f.removeImagesAfter([id], { force: true });
    const pushed = await registry.push(local, `fsinfo-${run}:1`);
    f.removeImagesAfter([pushed.ref], { force: true });
    await docker.getImage(id).remove({ force: true });
    const before = await f.client.images.ImageFsInfo({});
    await f.client.images.PullImage({ image: { image: pushed.ref }, auth: { username: registry.username, password: registry.password } });
    const after = await waitFor(
      'the pulled image\'s bytes and files to be counted',
      async () => {
        const now = await f.client.images.ImageFsInfo({});
        return bytesOf(now, 'imageFilesystems') >= bytesOf(before, 'imageFilesystems') + size - 8 * MiB && inodesOf(now, 'imageFilesystems') >= inodesOf(before, 'imageFilesystems') + files - 200 && now;
      },
      { timeoutMs: REFRESH_DEADLINE_MS, intervalMs: 250, explain: () => storageLog(f.shim) },
    );
    t.diagnostic(`images' figure: ${bytesOf(before, 'imageFilesystems')} -> ${bytesOf(after, 'imageFilesystems')} bytes, ${inodesOf(before, 'imageFilesystems')} -> ${inodesOf(after, 'imageFilesystems')} inodes (${size} random bytes and ${files} files pulled)`);
  });

  it('counts what a container writes to its writable layer', async (t) => {
    // The figure sums every container on the node, and other test files remove containers that
    // wrote up to ~13 MiB meanwhile (pod-metrics, stats): the write is large enough to stand out,
    // and the container's own figure (ContainerStats, from the same measurements) is exact.
    const written = 64 * MiB;
    const before = bytesOf(await f.client.images.ImageFsInfo({}), 'containerFilesystems');
    const id = await runContainer(f.client, f.pod, busybox(run, 'writer', { command: ['sh', '-c', `head -c ${written} /dev/zero > /blob && sleep 3600`] }));
    await waitFor(
      'the container\'s own writable layer to count what it wrote',
      async () => Number((await f.client.runtime.ContainerStats({ containerId: id })).stats?.writableLayer?.usedBytes?.value ?? 0) >= written,
      { timeoutMs: REFRESH_DEADLINE_MS, intervalMs: 250, explain: () => storageLog(f.shim) },
    );
    const after = await waitFor(
      'the 64 MiB the container wrote to be counted in the node\'s figure',
      async () => {
        const now = bytesOf(await f.client.images.ImageFsInfo({}), 'containerFilesystems');
        return now >= before + written - 24 * MiB && now;
      },
      { timeoutMs: REFRESH_DEADLINE_MS, intervalMs: 250, explain: () => storageLog(f.shim) },
    );
    t.diagnostic(`containers' figure: ${before} -> ${after} bytes (${written} written)`);
  });
});
