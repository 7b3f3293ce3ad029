import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { apiVersionToSemver, assertSupportedDocker, DockerTooOldError, isApiVersionAtLeast } from '../../../src/docker/docker-version';
import { cgroupParentFor, CgroupDriverMismatchError, detectCgroupSetup } from '../../../src/cgroups/driver';

describe('Docker API version gate', () => {
  it('compares major.minor API versions numerically', () => {
    assert.equal(apiVersionToSemver('1.41'), '1.41.0');
    assert.equal(isApiVersionAtLeast('1.41', '1.41'), true);
    assert.equal(isApiVersionAtLeast('1.100', '1.41'), true);
    assert.equal(isApiVersionAtLeast('1.9', '1.41'), false);
    assert.equal(isApiVersionAtLeast('2.0', '1.41'), true);
  });
  it('refuses a daemon older than API 1.41, naming both versions', () => {
    assert.throws(
      () => assertSupportedDocker({ Version: '19.03.15', ApiVersion: '1.40', Os: 'linux', Arch: 'amd64' }),
      (err: unknown) => err instanceof DockerTooOldError && /19\.03\.15/.test(err.message) && /1\.40/.test(err.message) && /1\.41/.test(err.message),
    );
    assert.doesNotThrow(() => assertSupportedDocker({ Version: '20.10.24', ApiVersion: '1.41', Os: 'linux', Arch: 'amd64' }));
  });
  it('refuses a malformed API version', () => {
    assert.throws(() => apiVersionToSemver('latest'), /not a Docker API version/);
  });
});

describe('cgroup driver', () => {
  it('takes the driver and version Docker reports', () => {
    assert.deepEqual(detectCgroupSetup({ CgroupDriver: 'systemd', CgroupVersion: '2' }, undefined), { driver: 'systemd', version: 2 });
    assert.deepEqual(detectCgroupSetup({ CgroupDriver: 'cgroupfs', CgroupVersion: '1' }, 'cgroupfs'), { driver: 'cgroupfs', version: 1 });
  });
  it('falls back to cgroupfs with a warning when Docker does not say', () => {
    const setup = detectCgroupSetup({}, undefined);
    assert.equal(setup.driver, 'cgroupfs');
    assert.equal(setup.version, undefined);
    assert.match(setup.warning ?? '', /assuming cgroupfs/);
  });
  it('refuses a --cgroup-driver that differs from Docker, naming both', () => {
    assert.throws(
      () => detectCgroupSetup({ CgroupDriver: 'cgroupfs' }, 'systemd'),
      (err: unknown) => err instanceof CgroupDriverMismatchError && /systemd/.test(err.message) && /cgroupfs/.test(err.message),
    );
  });
  it('converts cgroupfs parents to systemd slices only for the systemd driver', () => {
    assert.equal(cgroupParentFor('systemd', '/kubepods/burstable/pod1234-abcd'), 'kubepods-burstable-pod1234_abcd.slice');
    assert.equal(cgroupParentFor('systemd', 'kubepods-besteffort.slice'), 'kubepods-besteffort.slice');
    assert.equal(cgroupParentFor('systemd', ''), '');
    assert.equal(cgroupParentFor('cgroupfs', '/kubepods/burstable/pod1234-abcd'), '/kubepods/burstable/pod1234-abcd');
  });
});
