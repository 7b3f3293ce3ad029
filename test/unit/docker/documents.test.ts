// Readings of Docker documents whose shape differs between API 1.41 and 1.51 (and on to 1.52,
// so the next engine reads alike too), over the shapes each engine gives.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { imageStoreOf, ipsFromNetworkSettings, SYSTEM_CONTAINERD_ROOT, writableLayerDir, type NetworkSettingsLike } from '../../../src/docker/documents';
import { INSPECT, inspectDoc } from '../../support/fixtures/docker-container';

const UPPER = '/var/lib/docker/overlay2/4f1c0e8a/diff';

describe('writableLayerDir', () => {
  it('reads overlay2 UpperDir (graph drivers, Docker 20.10 to 28)', () => {
    const doc = inspectDoc({
      GraphDriver: {
        Name: 'overlay2',
        Data: { LowerDir: '/var/lib/docker/overlay2/4f1c0e8a-init/diff', MergedDir: '/var/lib/docker/overlay2/4f1c0e8a/merged', UpperDir: UPPER, WorkDir: '/var/lib/docker/overlay2/4f1c0e8a/work' },
      },
    });
    assert.equal(writableLayerDir(doc), UPPER);
  });

  it('gives none for the containerd image store: Data null up to API 1.51, GraphDriver left out from 1.52', () => {
    assert.equal(writableLayerDir(inspectDoc({ GraphDriver: { Name: 'overlayfs', Data: null } })), undefined);
    const doc = inspectDoc({ Storage: { RootFS: { Snapshot: { Name: 'overlayfs' } } } });
    assert.equal('GraphDriver' in doc, false);
    assert.equal(writableLayerDir(doc), undefined);
    assert.equal(writableLayerDir(inspectDoc({ GraphDriver: null })), undefined);
  });

  it('gives none for a driver without an upper directory, or a path that is not absolute', () => {
    assert.equal(writableLayerDir(inspectDoc({ GraphDriver: { Name: 'vfs', Data: {} } })), undefined);
    assert.equal(writableLayerDir(inspectDoc({ GraphDriver: { Name: 'overlay2', Data: { UpperDir: '' } } })), undefined);
    assert.equal(writableLayerDir(inspectDoc({ GraphDriver: { Name: 'overlay2', Data: { UpperDir: 'overlay2/x/diff' } } })), undefined);
  });
});

describe('ipsFromNetworkSettings', () => {
  // The captured Docker 20.10 container's NetworkSettings: its bridge endpoint in Networks.
  const networks = (INSPECT.NetworkSettings as unknown as NetworkSettingsLike).Networks!;

  it('gives the same addresses with the top-level fields (up to API 1.51) and without them (1.52)', () => {
    const upTo151 = { IPAddress: '172.17.0.2', GlobalIPv6Address: '', Gateway: '172.17.0.1', MacAddress: '02:42:ac:11:00:02', Bridge: '', Networks: networks };
    const from152 = { Networks: networks };
    assert.deepEqual(ipsFromNetworkSettings(upTo151), ['172.17.0.2']);
    assert.deepEqual(ipsFromNetworkSettings(from152), ['172.17.0.2']);
  });

  it('puts IPv4 before IPv6 on a dual-stack network, whose addresses only Networks has', () => {
    const settings = { IPAddress: '', GlobalIPv6Address: '', Networks: { podnet: { IPAddress: '10.1.0.5', GlobalIPv6Address: 'fd00::5' } } };
    assert.deepEqual(ipsFromNetworkSettings(settings), ['10.1.0.5', 'fd00::5']);
    assert.deepEqual(ipsFromNetworkSettings({ Networks: settings.Networks }), ['10.1.0.5', 'fd00::5']);
  });

  it('gives none for the none network, no Networks, or no NetworkSettings', () => {
    assert.deepEqual(ipsFromNetworkSettings({ IPAddress: '', Networks: { none: { IPAddress: '', GlobalIPv6Address: '' } } }), []);
    assert.deepEqual(ipsFromNetworkSettings({ Networks: null }), []);
    assert.deepEqual(ipsFromNetworkSettings(undefined), []);
  });
});

describe('imageStoreOf', () => {
  const CONTAINERD = [['driver-type', 'io.containerd.snapshotter.v1']] as Array<[string, string]>;
  it('a graph driver (20.10\'s info): <root>/<driver>', () => {
    const info = { DockerRootDir: '/var/lib/docker', Driver: 'overlay2', DriverStatus: [['Backing Filesystem', 'extfs'], ['Supports d_type', 'true']] as Array<[string, string]> };
    assert.deepEqual(imageStoreOf(info, () => true), { kind: 'graphdriver', mountpoint: '/var/lib/docker/overlay2', containerdRoot: '' });
  });

  it('the containerd store (28.5\'s info): the snapshotter of the containerd that has it, dockerd\'s own first', () => {
    const info = { DockerRootDir: '/var/lib/docker-28c', Driver: 'overlayfs', DriverStatus: CONTAINERD };
    const managed = '/var/lib/docker-28c/containerd/daemon';
    assert.deepEqual(imageStoreOf(info, (d) => d === `${managed}/io.containerd.snapshotter.v1.overlayfs`), {
      kind: 'containerd',
      mountpoint: `${managed}/io.containerd.snapshotter.v1.overlayfs`,
      containerdRoot: managed,
    });
    // docker-ce's packages: dockerd uses the system's containerd.
    assert.equal(imageStoreOf(info, (d) => d.startsWith(SYSTEM_CONTAINERD_ROOT))?.mountpoint, `${SYSTEM_CONTAINERD_ROOT}/io.containerd.snapshotter.v1.overlayfs`);
    assert.equal(imageStoreOf(info, () => false)?.mountpoint, `${managed}/io.containerd.snapshotter.v1.overlayfs`, 'neither yet: dockerd\'s own');
  });

  it('no root, or a driver name that is no name: none', () => {
    assert.equal(imageStoreOf({ DockerRootDir: '', Driver: 'overlay2' }, () => true), undefined);
    assert.equal(imageStoreOf({ DockerRootDir: '/var/lib/docker', Driver: '../x', DriverStatus: CONTAINERD }, () => true), undefined);
    assert.equal(imageStoreOf({ DockerRootDir: '/var/lib/docker', Driver: 'overlay2', DriverStatus: null }, () => true)?.kind, 'graphdriver');
  });
});
