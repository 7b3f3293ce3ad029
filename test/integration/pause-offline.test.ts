// A node with no registry: the default pause image cannot be pulled, so the shim makes it from
// its own static pause program (src/pause), and pods run. The pull is answered by a proxy in
// front of Docker as Docker answers when the registry's host cannot be resolved, so no traffic
// leaves this machine whatever its network. An image of that name that this machine got from
// elsewhere is never touched: the suite skips then.
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_POD_INFRA_IMAGE } from '../../src/config/flags';
import { LOCAL_PAUSE_LABEL, LOCAL_PAUSE_LABEL_VALUE } from '../../src/pause/local-image';
import { useShim } from '../support/fixture';
import { dockerApi } from '../support/images';

const UNREACHABLE = 'Get "https://registry.k8s.io/v2/": dial tcp: lookup registry.k8s.io: no such host';

/** The default image's labels, or undefined when Docker does not have it. */
async function defaultImageLabels(): Promise<Record<string, string> | undefined> {
  try {
    return (await dockerApi().getImage(DEFAULT_POD_INFRA_IMAGE).inspect()).Config.Labels ?? {};
  } catch {
    return undefined;
  }
}

/** Removes the default image if it is one the shim made (never one from elsewhere). */
async function removeLocallyMade(): Promise<void> {
  const labels = await defaultImageLabels();
  if (labels?.[LOCAL_PAUSE_LABEL] === LOCAL_PAUSE_LABEL_VALUE) await dockerApi().getImage(DEFAULT_POD_INFRA_IMAGE).remove();
}

describe('the default pause image on a node with no registry', async () => {
  await removeLocallyMade(); // a run cut short may have left one
  const foreign = (await defaultImageLabels()) !== undefined;
  const f = useShim({ behindProxy: true, args: [`--pod-infra-container-image=${DEFAULT_POD_INFRA_IMAGE}`] });
  before(() => f.proxy.answer(/^POST \S*\/images\/create\?fromImage=registry\.k8s\.io%2Fpause/, 500, UNREACHABLE));
  after(removeLocallyMade);

  it('is made from the shim\'s own pause program, and the pod runs', { skip: foreign && `${DEFAULT_POD_INFRA_IMAGE} on this Docker came from elsewhere` }, async () => {
    const pod = await f.startPod('offline');
    assert.ok(
      f.proxy.requests.some((r) => /\/images\/create\?fromImage=registry\.k8s\.io%2Fpause/.test(r)),
      'the shim tried to pull it first',
    );
    const { status } = await f.client.runtime.PodSandboxStatus({ podSandboxId: pod.id });
    assert.equal(status?.state, 'SANDBOX_READY');

    const pause = await dockerApi().getContainer(pod.id).inspect();
    assert.equal(pause.Config.Image, DEFAULT_POD_INFRA_IMAGE);
    assert.equal(pause.State.Running, true, 'the pause program holds the pod');
    assert.deepEqual(pause.Config.Entrypoint, ['/pause']);
    const image = await dockerApi().getImage(DEFAULT_POD_INFRA_IMAGE).inspect();
    assert.equal(image.Config.Labels?.[LOCAL_PAUSE_LABEL], LOCAL_PAUSE_LABEL_VALUE);
    assert.equal(image.Id, pause.Image, 'the pod runs the image made here');

    // ImageStatus reports it as the pinned pause image, as a pulled one would be.
    const { image: cri } = await f.client.images.ImageStatus({ image: { image: DEFAULT_POD_INFRA_IMAGE } });
    assert.equal(cri?.pinned, true);
  });
});
