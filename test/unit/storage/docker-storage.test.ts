// Docker's storage figures over a made-up Docker root (layer database, layer directories) and
// the fake Docker: what is counted, what is measured when, and that asking walks nothing.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CONTAINER_TYPE_LABEL } from '../../../src/conventions/labels';
import { imageStoreOf } from '../../../src/docker/documents';
import { UnimplementedError } from '../../../src/errors';
import { chainIds, readImageLayer } from '../../../src/storage/image-layers';
import { DockerStorage } from '../../../src/storage/docker-storage';
import { ShimObjectStore } from '../../../src/object-store/object-store';
import { decodeLayerFigures, encodeLayerFigures, LayerFiguresFile } from '../../../src/storage/layer-figures-file';
import { diskUsage, dutyCyclePace } from '../../../src/util/disk-usage';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker } from '../../support/fake-docker';
import { waitFor } from '../../support/poll';
import { tempDir } from '../../support/temp';
import { runningState } from '../../support/fixtures/docker-container';

const hex = (c: string): string => c.repeat(64);
const diff = (c: string): string => `sha256:${hex(c)}`;
const signal = new AbortController().signal;

describe('image layers', () => {
  it('chain IDs: the bottom layer is its diff ID, each one above the digest of the one below and its own', () => {
    assert.deepEqual(chainIds([]), []);
    assert.deepEqual(chainIds([diff('a')]), [diff('a')]);
    // sha256("sha256:aaa… sha256:bbb…"), as Docker's layer store computes it.
    assert.deepEqual(chainIds([diff('a'), diff('b')]), [diff('a'), 'sha256:ccd722928bd92476ba1745586fed6e45a102504185ad88cd89e01ff116fd146c']);
  });

  it('reads a layer record, and refuses names that are not Docker\'s', () => {
    const root = tempDir('layerdb');
    try {
      const record = (chain: string, size: string, cacheId: string): void => {
        const dir = path.join(root, 'image', 'overlay2', 'layerdb', 'sha256', chain);
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, 'size'), size);
        fs.writeFileSync(path.join(dir, 'cache-id'), cacheId);
      };
      record(hex('a'), '4096', 'abc123');
      record(hex('b'), '12', '../../etc');
      record(hex('c'), 'many', 'abc');
      assert.deepEqual(readImageLayer(root, 'overlay2', diff('a')), { dockerBytes: 4096, dir: path.join(root, 'overlay2', 'abc123') });
      assert.equal(readImageLayer(root, 'overlay2', diff('b')), undefined, 'a cache-id that is a path');
      assert.equal(readImageLayer(root, 'overlay2', diff('c')), undefined, 'a size that is no number');
      assert.equal(readImageLayer(root, 'overlay2', diff('d')), undefined, 'no record');
      assert.equal(readImageLayer(root, 'overlay2', `sha256:../${hex('a').slice(3)}`), undefined, 'not a digest');
      assert.equal(readImageLayer(root, '../x', diff('a')), undefined, 'not a driver name');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('DockerStorage', () => {
  let root: string;
  let docker: FakeDocker;
  let storage: DockerStorage;
  let now: number;
  const walks: string[][] = [];
  /** Each container's CPU time, as its cgroup would say; none: unknown. */
  const cpuUsage = new Map<string, bigint>();
  /** The state cache's version as the storage sees it; undefined (unsynced) unless a test sets one. */
  let stateVersion: number | undefined;
  /** The containers' CPU times read so far (each a cgroup file read). */
  let cpuReads = 0;

  /** A layer of Docker's: its record in the layer database and `files` in its directory. */
  function layer(chain: string, cacheId: string, dockerBytes: number, files: Record<string, string>): void {
    const record = path.join(root, 'image', 'overlay2', 'layerdb', 'sha256', chain.slice('sha256:'.length));
    fs.mkdirSync(record, { recursive: true });
    fs.writeFileSync(path.join(record, 'size'), String(dockerBytes));
    fs.writeFileSync(path.join(record, 'cache-id'), cacheId);
    for (const [name, text] of Object.entries(files)) {
      const file = path.join(root, 'overlay2', cacheId, 'diff', name);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, text);
    }
  }

  /** A shim container whose writable layer is <root>/overlay2/<name> (with "-init" beside it). */
  function container(id: string, name: string, running: boolean): void {
    const dir = path.join(root, 'overlay2', name);
    fs.mkdirSync(path.join(dir, 'diff'), { recursive: true });
    fs.mkdirSync(`${dir}-init`, { recursive: true });
    docker.addContainer({
      Id: id,
      Config: { Labels: { [CONTAINER_TYPE_LABEL]: 'container' } },
      State: running ? runningState() : { Status: 'exited', StartedAt: '2026-11-22T02:00:00Z', FinishedAt: '2026-11-22T02:01:00Z' },
      GraphDriver: { Name: 'overlay2', Data: { UpperDir: path.join(dir, 'diff') } },
    });
  }

  function start(opts: { walk?: typeof diskUsage; layerFigures?: LayerFiguresFile } = {}): void {
    storage = new DockerStorage({ docker, objects: new ShimObjectStore(docker), log: silentLogger(), cgroupReader: { cpuUsage: (c) => (cpuReads++, cpuUsage.get(c.id)) }, stateVersion: () => stateVersion }, root, 'overlay2', {
      layerFigures: opts.layerFigures,
      now: () => now,
      walkShare: 1,
      // Every walk of the image layers that read an entry is told of (onLayerWalkEnded).
      longWalkEntries: 1,
      walk: async (roots, o) => {
        walks.push([...roots]);
        return (opts.walk ?? diskUsage)(roots, o);
      },
    });
    storage.start();
  }

  beforeEach(() => {
    root = tempDir('docker-root');
    docker = new FakeDocker();
    now = Date.parse('2026-11-24T00:00:00Z');
    walks.length = 0;
    cpuUsage.clear();
    stateVersion = undefined;
    cpuReads = 0;
  });
  afterEach(() => {
    storage?.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('tells its listeners of each pass ended, until they unlisten', async () => {
    layer(diff('a'), 'base', 5_000, { 'bin/sh': 'x'.repeat(5_000) });
    docker.addImage('base:1', { RootFS: { Type: 'layers', Layers: [diff('a')] }, Size: 5_000 } as never);
    start();
    let ended = 0;
    const unlisten = storage.onPassEnded(() => ended++);
    await storage.settled();
    assert.equal(ended, 1, 'the first pass');
    storage.requestPass();
    await storage.settled();
    assert.equal(ended, 2, 'one asked for');
    unlisten();
    storage.requestPass();
    await storage.settled();
    assert.equal(ended, 2, 'no longer listening');
  });

  it('tells its listeners of each long walk of the image layers ended, not of a pass that had none to measure', async () => {
    layer(diff('a'), 'base', 5_000, { 'bin/sh': 'x'.repeat(5_000) });
    docker.addImage('base:1', { RootFS: { Type: 'layers', Layers: [diff('a')] }, Size: 5_000 } as never);
    start();
    let ended = 0;
    const unlisten = storage.onLayerWalkEnded(() => ended++);
    await storage.settled();
    assert.equal(ended, 1, 'the first walk, which measured the layer');
    storage.requestPass();
    await storage.settled();
    assert.equal(ended, 1, 'a pass with no layer left to measure');
    layer(chainIds([diff('a'), diff('b')])[1]!, 'app', 3_000, { 'app.txt': 'y'.repeat(3_000) });
    docker.addImage('app:1', { RootFS: { Type: 'layers', Layers: [diff('a'), diff('b')] }, Size: 8_000 } as never);
    stateVersion = 1; // the state moved: the pass reconciles the images again and finds the new layer
    storage.requestPass();
    await storage.settled();
    assert.equal(ended, 2, 'a new image\'s layer measured');
    unlisten();
  });

  it('counts a layer two images share once, and measures each layer once for good', async () => {
    layer(diff('a'), 'base', 5_000, { 'bin/sh': 'x'.repeat(5_000) });
    layer(chainIds([diff('a'), diff('b')])[1]!, 'app', 3_000, { 'app.txt': 'y'.repeat(3_000) });
    docker.addImage('base:1', { RootFS: { Type: 'layers', Layers: [diff('a')] }, Size: 5_000 } as never);
    docker.addImage('app:1', { RootFS: { Type: 'layers', Layers: [diff('a'), diff('b')] }, Size: 8_000 } as never);
    start();
    await storage.settled();
    const measured = await storage.imageFs(signal);
    const du = await diskUsage([path.join(root, 'overlay2', 'base'), path.join(root, 'overlay2', 'app'), path.join(root, 'image'), path.join(root, 'overlay2', 'l')]);
    assert.deepEqual({ bytes: measured.images.bytes, inodes: measured.images.inodes }, du, 'as du counts the layers and the metadata, the base once');
    assert.equal(measured.mountpoint, path.join(root, 'overlay2'));

    const walked = storage.walked.trees;
    now += 60 * 60_000;
    storage.requestPass();
    await storage.settled();
    assert.equal(storage.walked.trees, walked, 'an hour later nothing is walked again: nothing changed');
  });

  it('answers from memory: calls add no walk', async () => {
    layer(diff('a'), 'base', 5_000, { f: 'x' });
    docker.addImage('base:1', { RootFS: { Type: 'layers', Layers: [diff('a')] } } as never);
    container(hex('1'), 'c1', true);
    start();
    await storage.settled();
    const { trees, entries } = storage.walked;
    for (let i = 0; i < 20; i++) await storage.imageFs(signal);
    for (let i = 0; i < 20; i++) storage.writableLayer(hex('1'));
    assert.deepEqual(storage.walked, { trees, entries });
  });

  it('before a layer is measured, its bytes are Docker\'s count', async () => {
    layer(diff('a'), 'base', 5_000, { f: 'x' });
    docker.addImage('base:1', { RootFS: { Type: 'layers', Layers: [diff('a')] } } as never);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    start({ walk: async (roots, o) => (await held, diskUsage(roots, o)) });
    const first = await storage.imageFs(signal);
    assert.deepEqual([first.images.bytes, first.images.inodes], [5_000, 0]);
    release();
    await storage.settled();
    assert.ok((await storage.imageFs(signal)).images.inodes > 0);
  });

  it('measures a running container\'s layer again once its figure is old, a stopped one only after it ran again', async () => {
    container(hex('1'), 'running', true);
    container(hex('2'), 'stopped', false);
    start();
    await storage.settled();
    const layerOf = (name: string): number => walks.filter((w) => w[0] === path.join(root, 'overlay2', name)).length;
    assert.deepEqual([layerOf('running'), layerOf('stopped')], [1, 1]);
    assert.deepEqual([layerOf('running-init'), layerOf('stopped-init')], [1, 1]);

    fs.writeFileSync(path.join(root, 'overlay2', 'running', 'diff', 'log'), 'z'.repeat(8192));
    now += 5_000;
    storage.requestPass();
    await storage.settled();
    assert.deepEqual([layerOf('running'), layerOf('stopped')], [1, 1], 'too soon for the running one');

    now += 5_000;
    storage.requestPass();
    await storage.settled();
    assert.deepEqual([layerOf('running'), layerOf('stopped')], [2, 1], 'the stopped one cannot have changed');
    assert.equal(layerOf('running-init'), 1, 'an init layer is measured once');
    assert.ok(storage.writableLayer(hex('1'))!.bytes >= 8192);
    assert.equal(storage.writableLayer(hex('1'))!.atMs, now);
    assert.equal(storage.confirmed, 0, 'without a CPU figure nothing is confirmed unwalked');

    // It runs again and stops: it may have written.
    const doc = docker.containers.get(hex('2'))!;
    doc.State = { ...doc.State, StartedAt: new Date(now + 1_000).toISOString(), FinishedAt: new Date(now + 2_000).toISOString() };
    now += 3_000;
    storage.requestPass();
    await storage.settled();
    assert.equal(layerOf('stopped'), 2);

    const { containers } = await storage.imageFs(signal);
    assert.equal(containers.bytes, storage.writableLayer(hex('1'))!.bytes + storage.writableLayer(hex('2'))!.bytes);
    assert.equal(containers.atMs, Math.min(storage.writableLayer(hex('1'))!.atMs, storage.writableLayer(hex('2'))!.atMs), 'the oldest figure in it');
  });

  it('does not walk a running container\'s layer again while its CPU time stands still', async () => {
    container(hex('1'), 'idle', true);
    container(hex('2'), 'busy', true);
    cpuUsage.set(hex('1'), 5_000n).set(hex('2'), 7_000n);
    start();
    await storage.settled();
    const layerOf = (name: string): number => walks.filter((w) => w[0] === path.join(root, 'overlay2', name)).length;
    const first = storage.writableLayer(hex('1'))!;
    assert.deepEqual([layerOf('idle'), layerOf('busy')], [1, 1]);

    // Written from outside the container's cgroup: no CPU of its own, so not seen (as documented).
    fs.writeFileSync(path.join(root, 'overlay2', 'idle', 'diff', 'unseen'), 'u'.repeat(8192));
    fs.writeFileSync(path.join(root, 'overlay2', 'busy', 'diff', 'log'), 'z'.repeat(8192));
    cpuUsage.set(hex('2'), 9_000n);
    now += 10_000;
    storage.requestPass();
    await storage.settled();
    assert.deepEqual([layerOf('idle'), layerOf('busy')], [1, 2], 'only the one whose processes ran is walked');
    assert.equal(storage.confirmed, 1);
    assert.deepEqual(storage.writableLayer(hex('1')), { ...first, atMs: now }, 'the idle one\'s figure stands, confirmed as of now');
    assert.ok(storage.writableLayer(hex('2'))!.bytes >= first.bytes + 8192);

    // Its processes ran again: walked, and what they (or anyone) wrote is counted.
    cpuUsage.set(hex('1'), 5_001n);
    now += 10_000;
    storage.requestPass();
    await storage.settled();
    assert.deepEqual([layerOf('idle'), layerOf('busy')], [2, 2]);
    assert.ok(storage.writableLayer(hex('1'))!.bytes >= first.bytes + 8192);
    assert.deepEqual([layerOf('idle-init'), layerOf('busy-init')], [1, 1]);
  });

  it('asks Docker nothing while the state cache\'s version stands, and reconciles once it moves', async () => {
    container(hex('1'), 'c1', true);
    stateVersion = 7;
    start();
    await storage.settled();
    const asked = (): number => docker.calls.length;
    const before = asked();
    now += 10_000;
    storage.requestPass();
    await storage.settled();
    assert.equal(asked(), before, 'nothing changed: no list, no inspect');
    assert.equal((await storage.imageFs(signal)).images.atMs, now, 'the images\' figure is confirmed as of this pass');
    container(hex('2'), 'c2', false);
    stateVersion = 8;
    storage.requestPass();
    await storage.settled();
    assert.ok(asked() > before);
    assert.ok(storage.writableLayer(hex('2')), 'the new container is measured');
  });

  it('keeps the image layers\' figures across a restart: a layer is walked once, a changed directory again', async () => {
    layer(diff('a'), 'base', 5_000, { 'bin/sh': 'x'.repeat(5_000) });
    layer(chainIds([diff('a'), diff('b')])[1]!, 'app', 3_000, { 'app.txt': 'y'.repeat(3_000) });
    docker.addImage('app:1', { RootFS: { Type: 'layers', Layers: [diff('a'), diff('b')] } } as never);
    const file = new LayerFiguresFile(path.join(root, 'figures.json'), silentLogger());
    const imageWalks = (): string[] => walks.map((w) => path.basename(w[0]!)).filter((n) => n === 'base' || n === 'app' || n === 'app2');
    start({ layerFigures: file });
    await storage.settled();
    const first = await storage.imageFs(signal);
    assert.deepEqual(imageWalks().sort(), ['app', 'base']);
    storage.close();

    walks.length = 0;
    start({ layerFigures: file });
    await storage.settled();
    assert.deepEqual(imageWalks(), [], 'both figures taken from the file');
    assert.deepEqual((await storage.imageFs(signal)).images, first.images);
    storage.close();

    // Docker made the top layer anew in another directory (cache-id): its saved figure is not it.
    const record = path.join(root, 'image', 'overlay2', 'layerdb', 'sha256', chainIds([diff('a'), diff('b')])[1]!.slice('sha256:'.length));
    fs.writeFileSync(path.join(record, 'cache-id'), 'app2');
    fs.mkdirSync(path.join(root, 'overlay2', 'app2', 'diff'), { recursive: true });
    walks.length = 0;
    start({ layerFigures: file });
    await storage.settled();
    assert.deepEqual(imageWalks(), ['app2']);
  });

  it('walks every layer when the saved figures are corrupt, foreign or of another Docker root', async () => {
    layer(diff('a'), 'base', 5_000, { f: 'x' });
    docker.addImage('base:1', { RootFS: { Type: 'layers', Layers: [diff('a')] } } as never);
    const figures = path.join(root, 'figures.json');
    const saved = { dir: path.join(root, 'overlay2', 'base'), bytes: 1, inodes: 1, atMs: 1 };
    for (const text of ['{"format":', '[]', encodeLayerFigures('/elsewhere', 'overlay2', new Map([[diff('a'), saved]]))]) {
      fs.writeFileSync(figures, text);
      walks.length = 0;
      start({ layerFigures: new LayerFiguresFile(figures, silentLogger()) });
      await storage.settled();
      assert.ok(walks.some((w) => path.basename(w[0]!) === 'base'), text);
      assert.notEqual((await storage.imageFs(signal)).images.bytes, 1, text);
      storage.close();
    }
  });

  it('reads only well-formed saved figures under the Docker root', () => {
    const ok = { dir: '/var/lib/docker/overlay2/abc', bytes: 4096, inodes: 3, atMs: 5 };
    const text = JSON.stringify({
      format: 'cri-docker-shim.image-layers/v1',
      root: '/var/lib/docker',
      driver: 'overlay2',
      layers: { [diff('a')]: ok, [diff('b')]: { ...ok, dir: '/etc/passwd' }, [diff('c')]: { ...ok, bytes: -1 }, 'sha256:../x': ok, [diff('d')]: null },
    });
    assert.deepEqual([...decodeLayerFigures(text, '/var/lib/docker', 'overlay2')], [[diff('a'), ok]]);
    assert.throws(() => decodeLayerFigures('{}', '/var/lib/docker', 'overlay2'), /not a/);
  });

  it('forgets removed images and containers', async () => {
    layer(diff('a'), 'base', 5_000, { f: 'x'.repeat(4096) });
    docker.addImage('base:1', { RootFS: { Type: 'layers', Layers: [diff('a')] } } as never);
    container(hex('1'), 'c1', false);
    start();
    await storage.settled();
    const before = await storage.imageFs(signal);
    docker.images.clear();
    docker.containers.clear();
    storage.requestPass();
    await storage.settled();
    const after = await storage.imageFs(signal);
    assert.ok(after.images.bytes < before.images.bytes);
    assert.equal(after.containers.bytes, 0);
    assert.equal(storage.writableLayer(hex('1')), undefined);
  });

  it('without Docker\'s layer records, counts the sizes Docker reports for its images', async () => {
    docker.addImage('base:1', { RootFS: { Type: 'layers', Layers: [diff('a')] }, Size: 7_000 } as never);
    docker.addImage('app:1', { RootFS: { Type: 'layers', Layers: [diff('a'), diff('b')] }, Size: 9_000 } as never);
    start();
    await storage.settled();
    const { images } = await storage.imageFs(signal);
    assert.deepEqual([images.bytes, images.inodes], [16_000, 0]);
  });

  it('without a root or driver from Docker, ImageFsInfo is not offered', async () => {
    storage = new DockerStorage({ docker, objects: new ShimObjectStore(docker), log: silentLogger(), cgroupReader: { cpuUsage: () => undefined }, stateVersion: () => undefined }, '', '');
    storage.start();
    await assert.rejects(storage.imageFs(signal), UnimplementedError);
  });

  it('runs no pass while nobody asks (an hour of timers: no cgroup read, no walk, no request), and a call then brings the figures up to date', async (t) => {
    // The passes ran every 10 s on an interval: mocked here, so an hour of it is ticked at once.
    t.mock.timers.enable({ apis: ['setInterval'] });
    container(hex('1'), 'c1', true);
    cpuUsage.set(hex('1'), 5_000n);
    stateVersion = 3;
    start();
    await storage.settled();
    const work = (): unknown => ({ cpuReads, walks: walks.length, asked: docker.calls.length });
    const before = work();
    for (let i = 0; i < 360; i++) {
      now += 10_000;
      t.mock.timers.tick(10_000);
      await storage.settled();
    }
    assert.deepEqual(work(), before, 'an idle hour: nothing read, walked or asked');

    // Its processes wrote; the stats ask for its layer: the answer is the old figure, with its time, and a pass is asked for.
    fs.writeFileSync(path.join(root, 'overlay2', 'c1', 'diff', 'log'), 'z'.repeat(8192));
    cpuUsage.set(hex('1'), 6_000n);
    const old = storage.writableLayer(hex('1'))!;
    assert.ok(now - old.atMs >= 3_600_000, 'answered from memory, its time tells its age');
    await storage.settled();
    const fresh = storage.writableLayer(hex('1'))!;
    assert.equal(fresh.atMs, now);
    assert.ok(fresh.bytes >= old.bytes + 8192, `${old.bytes} -> ${fresh.bytes}`);

    // A container came (the state cache's version moved): ImageFsInfo asks for the pass that finds it.
    container(hex('2'), 'c2', true);
    cpuUsage.set(hex('2'), 1n);
    stateVersion = 4;
    now += 10_000;
    await storage.imageFs(signal);
    await storage.settled();
    assert.ok(storage.writableLayer(hex('2')), 'the new container is measured');
    const { containers } = await storage.imageFs(signal);
    assert.equal(containers.bytes, storage.writableLayer(hex('1'))!.bytes + storage.writableLayer(hex('2'))!.bytes);
  });

  it('a container\'s change (Docker\'s event) brings a pass that measures it, before anyone asks; a burst of changes is one pass', async () => {
    container(hex('1'), 'c1', true);
    stateVersion = 1;
    start();
    await storage.settled();
    const passesBefore = docker.calls.filter((c) => c.method === 'listContainers').length;
    container(hex('2'), 'c2', false);
    stateVersion = 2;
    now += 10_000; // no sooner than one pass per refreshMs
    for (let i = 0; i < 100; i++) storage.containerChanged();
    await waitFor('c2 walked, nobody asking', () => walks.some((w) => w[0] === path.join(root, 'overlay2', 'c2')), { timeoutMs: 10_000 });
    await storage.settled();
    assert.equal(docker.calls.filter((c) => c.method === 'listContainers').length, passesBefore + 1, 'one reconciling for the hundred changes');
  });

  it('calls polling every 250 ms while containers change bring one pass per refreshMs, not one per call', async () => {
    container(hex('1'), 'c1', true);
    stateVersion = 1;
    start();
    await storage.settled();
    const reconciles = (): number => docker.calls.filter((c) => c.method === 'listContainers').length;
    const before = reconciles();
    for (let i = 0; i < 40; i++) {
      stateVersion++; // another shim's container changed
      now += 250;
      await storage.imageFs(signal);
      storage.writableLayer(hex('1'));
      await storage.settled();
    }
    assert.equal(reconciles() - before, 1, '10 s of calls: one pass');
  });

  it('measures a container asked about while an image layer\'s walk is under way, without waiting for it', async () => {
    layer(diff('a'), 'base', 5_000, { f: 'x' });
    layer(chainIds([diff('a'), diff('b')])[1]!, 'app', 3_000, { g: 'y' });
    docker.addImage('app:1', { RootFS: { Type: 'layers', Layers: [diff('a'), diff('b')] } } as never);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    start({ walk: async (roots, o) => (roots[0]!.endsWith('base') ? await held : undefined, diskUsage(roots, o)) });
    await storage.imageFs(signal); // reconciled; the walk of the first image layer is held
    container(hex('1'), 'c1', true);
    assert.equal(storage.writableLayer(hex('1')), undefined, 'not measured yet: a pass is asked for');
    await waitFor('the container\'s layer, while the image layer\'s walk is held', () => storage.writableLayer(hex('1')));
    assert.deepEqual(walks.map((w) => path.basename(w[0]!)).filter((n) => n !== 'image'), ['base', 'c1-init', 'c1'], 'the second image layer waits for the first');
    release();
    await storage.settled();
    assert.ok(walks.some((w) => path.basename(w[0]!) === 'app'), 'the image layers are walked on afterwards');
    assert.ok((await storage.imageFs(signal)).images.inodes > 0);
  });

  it('stops a walk under way when closed', async () => {
    layer(diff('a'), 'base', 5_000, Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}`, 'x'])));
    docker.addImage('base:1', { RootFS: { Type: 'layers', Layers: [diff('a')] } } as never);
    let entries = 0;
    start({
      walk: (roots, o) =>
        diskUsage(roots, {
          ...o,
          pace: () => {
            if (++entries === 10) storage.close();
          },
        }),
    });
    await storage.settled();
    assert.ok(entries < 50, `stopped after ${entries} entries`);
  });
});

describe('DockerStorage on the containerd image store', () => {
  let root: string;
  let docker: FakeDocker;
  let storage: DockerStorage;
  let now: number;
  const walks: string[][] = [];
  /** The snapshot directory of each running container's init process, as its root mount says. */
  const snapshotOfPid = new Map<number, string>();
  const snapshotter = (): string => path.join(root, 'containerd', 'daemon', 'io.containerd.snapshotter.v1.overlayfs');
  const snapshot = (n: number, files: Record<string, string> = {}): string => {
    const dir = path.join(snapshotter(), 'snapshots', String(n));
    fs.mkdirSync(path.join(dir, 'work'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'fs'), { recursive: true });
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, 'fs', name), text);
    return dir;
  };

  function start(): void {
    const layout = imageStoreOf({ DockerRootDir: root, Driver: 'overlayfs', DriverStatus: [['driver-type', 'io.containerd.snapshotter.v1']] }, (d) => fs.existsSync(d));
    storage = new DockerStorage({ docker, objects: new ShimObjectStore(docker), log: silentLogger(), cgroupReader: { cpuUsage: () => undefined }, stateVersion: () => undefined }, root, 'overlayfs', {
      layout,
      now: () => now,
      walkShare: 1,
      snapshotDirOf: (pid) => snapshotOfPid.get(pid),
      walk: async (roots, o) => {
        walks.push([...roots]);
        return diskUsage(roots, o);
      },
    });
    storage.start();
  }

  /** A shim container as the containerd store inspects it: no directory named. */
  function container(id: string, pid: number, dir: string | undefined): void {
    if (dir) snapshotOfPid.set(pid, dir);
    docker.addContainer({
      Id: id,
      Config: { Labels: { [CONTAINER_TYPE_LABEL]: 'container' } },
      State: { ...runningState(), Pid: pid },
      GraphDriver: { Name: 'overlayfs', Data: null } as never,
    });
  }

  beforeEach(() => {
    root = tempDir('docker-root-c8d');
    docker = new FakeDocker();
    now = Date.parse('2026-11-24T00:00:00Z');
    walks.length = 0;
    snapshotOfPid.clear();
    fs.mkdirSync(path.join(root, 'containerd', 'daemon', 'io.containerd.content.v1.content', 'blobs', 'sha256'), { recursive: true });
    fs.writeFileSync(path.join(root, 'containerd', 'daemon', 'io.containerd.content.v1.content', 'blobs', 'sha256', hex('a')), 'b'.repeat(3_000));
    fs.mkdirSync(path.join(root, 'containerd', 'daemon', 'io.containerd.metadata.v1.bolt'), { recursive: true });
    fs.writeFileSync(path.join(root, 'containerd', 'daemon', 'io.containerd.metadata.v1.bolt', 'meta.db'), 'm'.repeat(100));
    fs.mkdirSync(snapshotter(), { recursive: true });
    fs.writeFileSync(path.join(snapshotter(), 'metadata.db'), 'm'.repeat(100));
  });
  afterEach(() => {
    storage?.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('names the snapshotter\'s directory, counts the snapshots and the content store with the images, a container\'s own snapshot with the containers', async () => {
    const base = snapshot(1, { sh: 'x'.repeat(5_000) });
    const init = snapshot(2, { hosts: '' });
    const upper = snapshot(3, { log: 'z'.repeat(20_000) });
    docker.addImage('base:1', { Size: 8_000 } as never);
    container(hex('1'), 4242, upper);
    start();
    await storage.settled();
    const fsInfo = await storage.imageFs(signal);
    assert.equal(fsInfo.mountpoint, snapshotter());
    assert.equal(storage.mountpoint, snapshotter());
    const content = path.join(root, 'containerd', 'daemon', 'io.containerd.content.v1.content');
    const bolt = path.join(root, 'containerd', 'daemon', 'io.containerd.metadata.v1.bolt');
    const images = await diskUsage([base, init, content, bolt, path.join(snapshotter(), 'metadata.db')]);
    assert.deepEqual({ bytes: fsInfo.images.bytes, inodes: fsInfo.images.inodes }, images, 'the image snapshots, the init snapshot, the blobs and the databases');
    const own = await diskUsage([upper]);
    assert.deepEqual({ bytes: fsInfo.containers.bytes, inodes: fsInfo.containers.inodes }, own);
    assert.deepEqual({ bytes: storage.writableLayer(hex('1'))!.bytes, inodes: storage.writableLayer(hex('1'))!.inodes }, own);
    assert.equal(storage.layerDir(hex('1')), upper);
  });

  it('keeps a container\'s snapshot once it stops (its root mount is gone), and forgets removed snapshots', async () => {
    const upper = snapshot(3, { log: 'z'.repeat(20_000) });
    const extra = snapshot(7, { big: 'q'.repeat(50_000) });
    container(hex('1'), 4242, upper);
    start();
    await storage.settled();
    const before = await storage.imageFs(signal);
    const doc = docker.containers.get(hex('1'))!;
    doc.State = { ...doc.State, Running: false, Pid: 0, Status: 'exited', FinishedAt: new Date(now + 1_000).toISOString() };
    snapshotOfPid.clear();
    fs.rmSync(extra, { recursive: true });
    now += 2_000;
    storage.requestPass();
    await storage.settled();
    const after = await storage.imageFs(signal);
    assert.equal(storage.layerDir(hex('1')), upper, 'the stopped container keeps its snapshot');
    assert.ok(after.containers.bytes >= 20_000);
    assert.ok(after.images.bytes <= before.images.bytes - 50_000, `the removed snapshot left the images' figure: ${before.images.bytes} -> ${after.images.bytes}`);
  });

  it('counts a stopped container never seen running by Docker\'s figure, asked once, and walks its snapshot once it runs', async () => {
    container(hex('1'), 4242, undefined);
    const doc = docker.containers.get(hex('1'))!;
    doc.State = { ...doc.State, Running: false, Pid: 0, Status: 'exited', FinishedAt: new Date(now - 1_000).toISOString() };
    docker.sizeRw.set(hex('1'), 12_345);
    start();
    await storage.settled();
    assert.deepEqual(storage.writableLayer(hex('1')), { bytes: 12_345, inodes: 0, atMs: now });
    const sized = (): number => docker.argsOf('listContainers').filter((a) => (a[0] as { size?: boolean }).size === true).length;
    assert.equal(sized(), 1);
    now += 60_000;
    storage.requestPass();
    await storage.settled();
    assert.equal(sized(), 1, 'asked once while it stays stopped');
    const upper = snapshot(9, { out: 'w'.repeat(30_000) });
    doc.State = { ...doc.State, ...runningState(), Pid: 4343 };
    snapshotOfPid.set(4343, upper);
    storage.requestPass();
    await storage.settled();
    assert.equal(storage.layerDir(hex('1')), upper);
    assert.ok(storage.writableLayer(hex('1'))!.inodes > 0, 'walked now');
  });

  it('a container whose root is not a snapshot there has no figure', async () => {
    container(hex('1'), 4242, undefined);
    start();
    await storage.settled();
    assert.equal(storage.writableLayer(hex('1')), undefined);
    assert.equal((await storage.imageFs(signal)).containers.bytes, 0);
  });
});

describe('dutyCyclePace', () => {
  it('rests three times the work for a quarter share, once a slice is worked', async () => {
    let t = 0;
    const pace = dutyCyclePace(0.25, 20, () => t);
    t = 10;
    assert.equal(pace(), undefined, 'within the slice: no rest');
    t = 20;
    const rest = pace();
    assert.ok(rest instanceof Promise, 'a slice worked: it rests');
    await rest;
  });

  it('counts an idle spell between walks as idle, not work: the next walk starts with no rest', () => {
    let t = 0;
    const pace = dutyCyclePace(0.25, 20, () => t);
    t = 15;
    assert.equal(pace(), undefined);
    // The walk ended; the next starts 10 s later (one pace serves every walk). Before, it rested
    // three times those 10 s before its first entry.
    t = 10_015;
    assert.equal(pace(), undefined, 'a fresh slice');
    t = 10_030;
    assert.equal(pace(), undefined, 'still within that slice');
    t = 10_036;
    assert.ok(pace() instanceof Promise, 'a slice of work: it rests, for three times about 20 ms');
  });
});
