// Moving a node between cri-dockerd and the shim, through the sandbox checkpoints under the
// shared root directory: every pod the shim makes has cri-dockerd's checkpoint too (content and
// checksum as cri-dockerd verifies it, gone with the pod); a pod known only from cri-dockerd's
// checkpoint (ours deleted by cri-dockerd, or made by cri-dockerd) is listed, reported and
// cleaned up as before.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { dockerApi, TEST_PAUSE_IMAGE } from '../support/images';
import { useShim } from '../support/fixture';
import { podConfig } from '../support/pods';

describe('sandbox checkpoints shared with cri-dockerd', () => {
  const f = useShim({ shim: false });
  const { run } = f;

  it("writes cri-dockerd's checkpoint with each pod, reads it once cri-dockerd has deleted ours, and removes it with the pod", async () => {
    const rootDir = f.tempDir('cri-dockerd-checkpoint');
    const dir = path.join(rootDir, 'sandbox');
    let { shim } = await f.startShim({ rootDir });
    const config = podConfig(run, { portMappings: [{ protocol: 'TCP', containerPort: 80, hostPort: 0, hostIp: '' }] });
    const { podSandboxId: id } = await shim.client.runtime.RunPodSandbox({ config });
    const before = (await shim.client.runtime.ListPodSandbox({ filter: { id } })).items;

    // Exactly the bytes cri-dockerd would write; 73209639 is go-spew's FNV-1a of this data.
    assert.equal(
      fs.readFileSync(path.join(dir, id), 'utf8'),
      `{"version":"v1","name":"${config.metadata!.name}","namespace":"sandbox-test","data":{"port_mappings":[{"protocol":"tcp","container_port":80,"host_port":0}]},"checksum":73209639}`,
    );
    assert.deepEqual(fs.readdirSync(dir).sort(), [id, `${id}.json`]);

    // cri-dockerd ran meanwhile: its ListPodSandbox deleted our file (a checksum it cannot verify).
    await shim.stop();
    fs.rmSync(path.join(dir, `${id}.json`));
    ({ shim } = await f.startShim({ rootDir }));
    const after = (await shim.client.runtime.ListPodSandbox({ filter: { id } })).items;
    assert.equal(after.length, 1);
    assert.equal(after[0]!.state, 'SANDBOX_READY');
    assert.deepEqual(after[0]!.metadata, before[0]!.metadata, 'name, namespace, uid and attempt from the pause container');
    assert.deepEqual(after[0]!.labels, before[0]!.labels);
    const { info } = await shim.client.runtime.PodSandboxStatus({ podSandboxId: id, verbose: true });
    assert.deepEqual(JSON.parse(info.info!).portMappings, [{ protocol: 'TCP', containerPort: 80, hostPort: 0, hostIp: '' }], "port mappings from cri-dockerd's checkpoint");

    await shim.client.runtime.StopPodSandbox({ podSandboxId: id });
    await shim.client.runtime.RemovePodSandbox({ podSandboxId: id });
    assert.deepEqual(fs.readdirSync(dir), [], 'no checkpoint of either kind left');
  });

  it("lists a pod known only from cri-dockerd's checkpoint NOTREADY, and Stop and Remove clean it up", async () => {
    const rootDir = f.tempDir('cri-dockerd-adopt');
    const dir = path.join(rootDir, 'sandbox');
    // A pause container as cri-dockerd names and labels it (the shim's names and labels are its).
    const name = `adopted-${run}`;
    const uid = `uid-${run}-adopted`;
    // The pod's labels as kubelet gives them, plus the type label cri-dockerd adds.
    const podLabels = { ...f.labels(), 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'sandbox-test', 'io.kubernetes.pod.uid': uid, app: name };
    const pause = await dockerApi().createContainer({
      name: `k8s_POD_${name}_sandbox-test_${uid}_1`,
      Image: TEST_PAUSE_IMAGE,
      Labels: { ...podLabels, 'io.kubernetes.docker.type': 'podsandbox' },
    });
    const id = pause.id;
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    // cri-dockerd's own checkpoint of it (a host-network pod: go-spew's checksum 12315789).
    fs.writeFileSync(path.join(dir, id), `{"version":"v1","name":"${name}","namespace":"sandbox-test","data":{"host_network":true},"checksum":12315789}`);
    // Beside it, files that are not checkpoints: left alone.
    fs.writeFileSync(path.join(dir, 'e'.repeat(64)), '{"version":"v1","name":"x","namespace":"y","data":{},"checksum":1}');
    fs.writeFileSync(path.join(dir, '.tmp123'), 'partial');

    // While the container exists, it is the source of the pod's identity.
    let { shim } = await f.startShim({ rootDir });
    const [withContainer] = (await shim.client.runtime.ListPodSandbox({ filter: { id } })).items;
    assert.deepEqual(withContainer?.metadata, { name, namespace: 'sandbox-test', uid, attempt: 1 });
    assert.deepEqual(withContainer?.labels, podLabels);
    assert.equal(withContainer?.state, 'SANDBOX_NOTREADY', 'created, never started');
    await shim.stop();

    await pause.remove({ force: true });
    ({ shim } = await f.startShim({ rootDir }));
    const listed = (await shim.client.runtime.ListPodSandbox({})).items.filter((s) => s.id === id);
    assert.equal(listed.length, 1);
    assert.equal(listed[0]!.state, 'SANDBOX_NOTREADY');
    assert.deepEqual(listed[0]!.metadata, { name, namespace: 'sandbox-test', uid: '', attempt: 0 }, "what cri-dockerd's checkpoint holds, as cri-dockerd lists it");
    const { status } = await shim.client.runtime.PodSandboxStatus({ podSandboxId: id });
    assert.equal(status?.linux?.namespaces?.options?.network, 'NODE', 'host network from the checkpoint');
    assert.match(shim.output(), /not a valid cri-dockerd sandbox checkpoint/);

    await shim.client.runtime.StopPodSandbox({ podSandboxId: id });
    await shim.client.runtime.RemovePodSandbox({ podSandboxId: id });
    assert.equal((await shim.client.runtime.ListPodSandbox({ filter: { id } })).items.length, 0);
    assert.deepEqual(fs.readdirSync(dir).sort(), ['.tmp123', 'e'.repeat(64)], 'its checkpoint gone, the foreign files left');
  });
});
