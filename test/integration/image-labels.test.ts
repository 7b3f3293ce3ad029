// An image's labels, which Docker merges into its containers', steer nothing: a container made
// with no log path from an image labelled with a log path, a pod, a container name and the
// shim's own type and sandbox labels is started and reported as the shim made it.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { testLabels } from '../support/cleanup';
import { useShim } from '../support/fixture';
import { dockerApi, TEST_BUSYBOX_IMAGE } from '../support/images';
import { waitFor } from '../support/poll';
import { busybox, logFile, runContainer } from '../support/pods';

describe("an image's labels", () => {
  const f = useShim({ pod: 'labelled' });
  let image: string;
  let planted: string;

  before(async () => {
    planted = path.join(f.tempDir('planted-log'), 'appended-by-root.log');
    const docker = dockerApi();
    image = `cds-test-labelled:${f.run}`;
    f.removeImagesAfter([image], { force: true });
    // Built offline: the test busybox image, committed with the labels a hostile image would carry.
    const base = await docker.createContainer({ Image: TEST_BUSYBOX_IMAGE, Cmd: ['true'], Labels: testLabels(f.run) });
    try {
      const [repo, tag] = image.split(':');
      await base.commit({
        repo,
        tag,
        changes: [
          `LABEL io.kubernetes.container.logpath="${planted}"`,
          'LABEL io.kubernetes.pod.namespace="kube-system" io.kubernetes.pod.name="kube-apiserver" io.kubernetes.container.name="etcd"',
          `LABEL io.kubernetes.docker.type="podsandbox" io.kubernetes.sandbox.id="${'e'.repeat(64)}"`,
          'LABEL annotation.planted="yes" planted="yes"',
        ],
      } as object);
    } finally {
      await base.remove({ force: true });
    }
  });

  it('do not name the log, nor change the container, its pod or its labels, when the container has no log path of its own', async () => {
    const id = await runContainer(f.client, f.pod, busybox(f.run, 'app', { image: { image }, logPath: '', command: ['sh', '-c', 'echo planted-output; exec sleep 3600'] }));
    // A container beside it with a log path of its own: once its output is in its file, the
    // shim has had every chance to write the other's.
    await runContainer(f.client, f.pod, busybox(f.run, 'witness', { command: ['sh', '-c', 'echo witness-output; exec sleep 3600'] }));
    await waitFor('the witness output in its log', () => fs.existsSync(logFile(f.pod, 'witness')) && /witness-output/.test(fs.readFileSync(logFile(f.pod, 'witness'), 'utf8')));
    assert.equal(fs.existsSync(planted), false, 'the file the image named was made');

    const { status } = await f.client.runtime.ContainerStatus({ containerId: id });
    assert.equal(status?.logPath, '');
    assert.equal(status?.state, 'CONTAINER_RUNNING');
    assert.deepEqual(status?.metadata, { name: 'app', attempt: 0 });
    assert.deepEqual(status?.labels, testLabels(f.run));
    assert.deepEqual(status?.annotations, {});

    const { containers } = await f.client.runtime.ListContainers({ filter: { id } });
    assert.equal(containers.length, 1);
    assert.equal(containers[0]!.podSandboxId, f.pod.id);
    assert.deepEqual(containers[0]!.labels, testLabels(f.run));
    assert.deepEqual(containers[0]!.annotations, {});
    const bySelector = await f.client.runtime.ListContainers({ filter: { labelSelector: { 'io.kubernetes.pod.namespace': 'kube-system' } } });
    assert.deepEqual(bySelector.containers.map((c) => c.id).filter((c) => c === id), [], 'selected by a label the image carries');
    const { items } = await f.client.runtime.ListPodSandbox({ filter: { id } });
    assert.deepEqual(items, [], 'listed as a pod');
  });
});
