// ensureImage: inspect first; pull (without credentials) only when Docker says the image is missing.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { DockerClient } from '../../src/docker/client';
import type { ImageInspect, RegistryAuth } from '../../src/docker/types';
import { DockerNotFoundError, DockerUnreachableError } from '../../src/errors';
import { ensureImage } from '../../src/shim/sandbox/ensure-image';
import { silentLogger } from '../../src/util/logger';

type ImageCalls = Pick<DockerClient, 'inspectImage' | 'pullImage'>;

function fakeDocker(inspectFails: Error | undefined): ImageCalls & { pulls: Array<{ ref: string; auth: RegistryAuth | undefined }> } {
  const pulls: Array<{ ref: string; auth: RegistryAuth | undefined }> = [];
  return {
    pulls,
    async inspectImage(ref: string) {
      if (inspectFails) throw inspectFails;
      return { Id: `sha256:${ref}` } as ImageInspect;
    },
    async pullImage(ref: string, auth: RegistryAuth | undefined) {
      pulls.push({ ref, auth });
    },
  };
}

describe('ensureImage', () => {
  it('does not pull an image Docker has', async () => {
    const docker = fakeDocker(undefined);
    await ensureImage(docker, 'registry.k8s.io/pause:3.10', silentLogger());
    assert.deepEqual(docker.pulls, []);
  });

  it('pulls a missing image, without credentials', async () => {
    const docker = fakeDocker(new DockerNotFoundError('No such image'));
    await ensureImage(docker, 'registry.k8s.io/pause:3.10', silentLogger());
    assert.deepEqual(docker.pulls, [{ ref: 'registry.k8s.io/pause:3.10', auth: undefined }]);
  });

  it('passes other inspect failures through without pulling', async () => {
    const docker = fakeDocker(new DockerUnreachableError('docker is down'));
    await assert.rejects(ensureImage(docker, 'pause', silentLogger()), DockerUnreachableError);
    assert.deepEqual(docker.pulls, []);
  });
});
