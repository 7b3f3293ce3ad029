// ensureImage: inspect first; pull only when Docker says the image is missing, and then with
// the credentials the configured sources offer (as a PullImage without auth would).
import { strict as assert } from 'node:assert';
import { afterEach, describe, it } from 'node:test';
import type { RegistryAuth } from '../../src/docker/types';
import { DockerUnreachableError } from '../../src/errors';
import type { CredentialSource } from '../../src/credentials/providers';
import { ensureImage } from '../../src/shim/sandbox/ensure-image';
import { callContext, fakeShimContext, type FakeShim } from '../support/fake-context';
import { imageDoc } from '../support/fake-docker';

/** A context over the fake Docker whose pulls of `ref` succeed, and whose credential sources are recorded. */
async function fakeShim(ref: string, credentials: CredentialSource): Promise<FakeShim & { asked: string[] }> {
  const asked: string[] = [];
  const recording: CredentialSource = {
    credentialsFor: async (image) => {
      asked.push(image);
      return credentials.credentialsFor(image);
    },
  };
  const f = await fakeShimContext({ credentials: recording });
  f.docker.registry.set(ref, imageDoc(ref));
  return Object.assign(f, { asked });
}

const ctx = callContext('RunPodSandbox');
const none: CredentialSource = { credentialsFor: async () => [] };

describe('ensureImage', () => {
  let f: FakeShim & { asked: string[] };
  afterEach(() => f.close());

  it('does not pull an image Docker has', async () => {
    f = await fakeShim('registry.k8s.io/pause:3.10', none);
    f.docker.addImage('registry.k8s.io/pause:3.10');
    await ensureImage(f.shim, 'registry.k8s.io/pause:3.10', ctx);
    assert.deepEqual(f.docker.callLines(), ['inspectImage registry.k8s.io/pause:3.10']);
    assert.deepEqual(f.asked, []);
  });

  it('pulls a missing image anonymously when no source offers credentials', async () => {
    f = await fakeShim('registry.k8s.io/pause:3.10', none);
    await ensureImage(f.shim, 'registry.k8s.io/pause:3.10', ctx);
    assert.deepEqual(f.asked, ['registry.k8s.io/pause:3.10']);
    assert.deepEqual(f.docker.methods(), ['inspectImage', 'pullImage', 'inspectImage'], 'inspect, pull, then the pulled image');
    assert.deepEqual(f.docker.argsOf('pullImage'), [['registry.k8s.io/pause:3.10', undefined]]);
    assert.ok(f.docker.images.has('registry.k8s.io/pause:3.10'), 'the image is there afterwards');
  });

  it('pulls a missing image with the credentials a provider offers', async () => {
    const offered: CredentialSource = { credentialsFor: async () => [{ username: 'u', password: 'p' }] };
    f = await fakeShim('registry.example:5000/pause:3.10', offered);
    await ensureImage(f.shim, 'registry.example:5000/pause:3.10', ctx);
    const pulls = f.docker.argsOf('pullImage') as Array<[string, RegistryAuth | undefined]>;
    assert.equal(pulls.length, 1);
    const [ref, auth] = pulls[0]!;
    assert.equal(ref, 'registry.example:5000/pause:3.10');
    assert.equal(auth?.username, 'u');
    assert.equal(auth?.password, 'p');
    assert.equal(auth?.serveraddress, 'registry.example:5000');
  });

  it('passes other inspect failures through without pulling', async () => {
    f = await fakeShim('pause', none);
    f.docker.fail('inspectImage', { error: new DockerUnreachableError('docker is down') });
    await assert.rejects(ensureImage(f.shim, 'pause', ctx), DockerUnreachableError);
    assert.deepEqual(f.docker.methods(), ['inspectImage']);
  });
});
