// ensureImage: inspect first; pull only when Docker says the image is missing, and then with
// the credentials the configured sources offer (as a PullImage without auth would). The default
// image that cannot be pulled is made from the shim's own pause program; no other one is.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { extract } from 'tar-stream';
import { DEFAULT_POD_INFRA_IMAGE } from '../../../../../src/config/flags';
import type { RegistryAuth } from '../../../../../src/docker/types';
import { DockerUnreachableError, NotFoundError } from '../../../../../src/errors';
import type { CredentialSource } from '../../../../../src/credentials/providers';
import { layerOf, LOCAL_PAUSE_LABEL, LOCAL_PAUSE_LABEL_VALUE, localPauseProgram } from '../../../../../src/pause/local-image';
import { ensureImage } from '../../../../../src/shim/sandbox/support/ensure-image';
import { waitFor } from '../../../../support/poll';
import { tempDir } from '../../../../support/temp';
import { callContext, fakeShimContext, type FakeShim } from '../../../../support/fake-context';
import { imageDoc } from '../../../../support/fake-docker';

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

describe('ensureImage of an image that cannot be pulled', () => {
  let f: FakeShim & { asked: string[] };
  afterEach(() => f.close());

  it('makes the default image from the shim\'s own pause program, labelled as made here', async () => {
    assert.ok(localPauseProgram(), 'npm run build made dist/pause/pause (it needs gcc and libc6-dev)');
    f = await fakeShim('elsewhere/only:1', none);
    await ensureImage(f.shim, DEFAULT_POD_INFRA_IMAGE, ctx);
    assert.deepEqual(f.docker.methods(), ['inspectImage', 'pullImage', 'inspectImage', 'importImage']);
    assert.deepEqual(f.docker.argsOf('importImage'), [
      [{ repo: 'registry.k8s.io/pause', tag: '3.10', changes: ['ENTRYPOINT ["/pause"]', `LABEL ${LOCAL_PAUSE_LABEL}=${LOCAL_PAUSE_LABEL_VALUE}`] }],
    ]);
    const image = f.docker.images.get(DEFAULT_POD_INFRA_IMAGE);
    assert.equal(image?.Config.Labels?.[LOCAL_PAUSE_LABEL], LOCAL_PAUSE_LABEL_VALUE);
  });

  it('never replaces an image the user named: the pull\'s error is the answer', async () => {
    f = await fakeShim('elsewhere/only:1', none);
    await assert.rejects(ensureImage(f.shim, 'registry.example:5000/pause:3.10', ctx), NotFoundError);
    assert.deepEqual(f.docker.argsOf('importImage'), []);
  });

  it('makes nothing when the pull was cancelled', async () => {
    f = await fakeShim('elsewhere/only:1', none);
    const aborted = new AbortController();
    f.docker.fail('pullImage', { hang: true });
    const ensured = ensureImage(f.shim, DEFAULT_POD_INFRA_IMAGE, callContext('RunPodSandbox', aborted));
    await waitFor('the pull to start', () => f.docker.methods().includes('pullImage'));
    aborted.abort();
    await assert.rejects(ensured);
    assert.deepEqual(f.docker.argsOf('importImage'), []);
  });
});

describe('the local pause program', () => {
  it('is found at dist/pause/pause of the nearest package, from the bundle\'s folder or tsc\'s', () => {
    const root = tempDir('pause-pkg');
    try {
      fs.writeFileSync(path.join(root, 'package.json'), '{}');
      fs.mkdirSync(path.join(root, 'dist', 'src', 'pause'), { recursive: true });
      assert.equal(localPauseProgram(path.join(root, 'dist', 'src')), undefined, 'no program built');
      fs.mkdirSync(path.join(root, 'dist', 'pause'));
      fs.writeFileSync(path.join(root, 'dist', 'pause', 'pause'), '');
      const program = path.join(root, 'dist', 'pause', 'pause');
      assert.equal(localPauseProgram(path.join(root, 'dist', 'src'))?.where, program);
      assert.equal(localPauseProgram(path.join(root, 'dist', 'src', 'pause'))?.where, program);
      fs.writeFileSync(program, 'the program');
      assert.equal(localPauseProgram(path.join(root, 'dist', 'src'))?.read().toString(), 'the program');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('goes into a layer holding /pause alone, executable and owned by root', async () => {
    const program = Buffer.from('\x7fELF not really');
    const entries: Array<{ name: string; mode?: number; uid?: number; body: string }> = [];
    const reader = extract();
    const done = new Promise<void>((resolve, reject) => {
      reader.on('entry', (header, stream, next) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: unknown) => chunks.push(c as Buffer));
        stream.on('end', () => {
          entries.push({ name: header.name, mode: header.mode, uid: header.uid, body: Buffer.concat(chunks).toString('latin1') });
          next();
        });
      });
      reader.on('finish', resolve);
      reader.on('error', reject);
    });
    reader.end(await layerOf(program));
    await done;
    assert.deepEqual(entries, [{ name: 'pause', mode: 0o755, uid: 0, body: program.toString('latin1') }]);
  });
});
