// ensureImage: inspect first; pull only when Docker says the image is missing, and then with
// the credentials the configured sources offer (as a PullImage without auth would).
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { CallContext } from '../../src/cri/types';
import type { DockerClient } from '../../src/docker/client';
import type { ImageInspect, RegistryAuth } from '../../src/docker/types';
import { DockerNotFoundError, DockerUnreachableError } from '../../src/errors';
import type { CredentialSource } from '../../src/credentials/providers';
import type { ShimContext } from '../../src/shim/context';
import { ensureImage } from '../../src/shim/sandbox/ensure-image';
import { silentLogger } from '../../src/util/logger';

interface Pull {
  ref: string;
  auth: RegistryAuth | undefined;
}

function fakeShim(inspectFailsFirst: Error | undefined, credentials: CredentialSource): { shim: ShimContext; pulls: Pull[]; asked: string[] } {
  const pulls: Pull[] = [];
  let inspections = 0;
  const docker: Pick<DockerClient, 'inspectImage' | 'pullImage'> = {
    async inspectImage(ref: string) {
      inspections++;
      if (inspectFailsFirst && inspections === 1) throw inspectFailsFirst;
      return { Id: `sha256:${ref.length}` } as ImageInspect;
    },
    async pullImage(ref: string, auth: RegistryAuth | undefined) {
      pulls.push({ ref, auth });
    },
  };
  const asked: string[] = [];
  const recording: CredentialSource = {
    credentialsFor: async (image) => {
      asked.push(image);
      return credentials.credentialsFor(image);
    },
  };
  const shim = {
    docker,
    credentials: recording,
    log: silentLogger(),
    config: { imagePullProgressDeadlineMs: 60_000 },
  } as unknown as ShimContext;
  return { shim, pulls, asked };
}

const ctx: CallContext = { method: 'test', signal: new AbortController().signal, deadline: undefined };
const none: CredentialSource = { credentialsFor: async () => [] };

describe('ensureImage', () => {
  it('does not pull an image Docker has', async () => {
    const { shim, pulls } = fakeShim(undefined, none);
    await ensureImage(shim, 'registry.k8s.io/pause:3.10', ctx);
    assert.deepEqual(pulls, []);
  });

  it('pulls a missing image anonymously when no source offers credentials', async () => {
    const { shim, pulls, asked } = fakeShim(new DockerNotFoundError('No such image'), none);
    await ensureImage(shim, 'registry.k8s.io/pause:3.10', ctx);
    assert.deepEqual(asked, ['registry.k8s.io/pause:3.10']);
    assert.deepEqual(pulls, [{ ref: 'registry.k8s.io/pause:3.10', auth: undefined }]);
  });

  it('pulls a missing image with the credentials a provider offers', async () => {
    const offered: CredentialSource = { credentialsFor: async () => [{ username: 'u', password: 'p' }] };
    const { shim, pulls } = fakeShim(new DockerNotFoundError('No such image'), offered);
    await ensureImage(shim, 'registry.example:5000/pause:3.10', ctx);
    assert.equal(pulls.length, 1);
    assert.equal(pulls[0]!.ref, 'registry.example:5000/pause:3.10');
    assert.equal(pulls[0]!.auth?.username, 'u');
    assert.equal(pulls[0]!.auth?.password, 'p');
    assert.equal(pulls[0]!.auth?.serveraddress, 'registry.example:5000');
  });

  it('passes other inspect failures through without pulling', async () => {
    const { shim, pulls } = fakeShim(new DockerUnreachableError('docker is down'), none);
    await assert.rejects(ensureImage(shim, 'pause', ctx), DockerUnreachableError);
    assert.deepEqual(pulls, []);
  });
});
