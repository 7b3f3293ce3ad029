// The `shim` service of docker-compose.yml: the shim in its image beside the host's own Docker,
// in the host's PID and network namespaces, with its paths mounted from the host (here: temp
// directories and a CNI network of the test's own, under a project name of the test's own).
// Its healthcheck turns healthy; through its socket a pod runs on the CNI network with a
// container; a restarted service lists the pod again; `down -v` leaves nothing behind.
import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { criClient, type CriClient } from '../support/client';
import { newTestRun, removePaths } from '../support/cleanup';
import { makeTestNetwork, type TestNetwork } from '../support/cni-network';
import { buildImages, composeProject, composeUnavailable, footprintOf, leftoversOf, type ComposeProject, type HostFootprint } from '../support/compose';
import { TEST_PAUSE_IMAGE } from '../support/images';
import { busybox, SLEEP_FOREVER, startTestPod, type TestPod } from '../support/pods';
import { waitFor } from '../support/poll';

const run = promisify(execFile);
const unavailable = composeUnavailable();

describe('docker-compose shim service', { skip: unavailable }, () => {
  const testRun = newTestRun();
  let project: ComposeProject;
  let network: TestNetwork;
  let client: CriClient;
  let socket: string;
  let pod: TestPod | undefined;
  let footprint: HostFootprint | undefined;

  const health = async (): Promise<string> =>
    (await run('docker', ['inspect', '-f', '{{.State.Health.Status}}', await project.containerId('shim')])).stdout.trim();

  before(async () => {
    await buildImages();
    network = makeTestNetwork();
    project = composeProject('cdsshim', {});
    const dirs = Object.fromEntries(['socket', 'root', 'cni-state'].map((d) => [d, path.join(project.dir, d)]));
    Object.assign(project.env, {
      CRI_SOCKET_DIR: dirs.socket,
      SHIM_ROOT_DIR: dirs.root,
      CNI_STATE_DIR: dirs['cni-state'],
      CNI_CONF_DIR: network.confDir,
      CNI_BIN_DIR: '/usr/lib/cni',
      PAUSE_IMAGE: TEST_PAUSE_IMAGE,
    });
    // The test network keeps its IPAM state in a directory of its own: the same path inside.
    project.addOverride(`services:\n  shim:\n    volumes:\n      - ${network.ipamDir}:${network.ipamDir}\n`);
    fs.mkdirSync(network.ipamDir, { recursive: true });
    await project.compose(['--profile', 'host', 'up', '-d', 'shim']);
    footprint = await footprintOf(project);
    socket = path.join(dirs.socket!, 'cri-docker-shim.sock');
    client = criClient(`unix://${socket}`);
  });

  after(async () => {
    if (pod) await client.runtime.RemovePodSandbox({ podSandboxId: pod.id }).catch(() => undefined);
    if (pod) removePaths(pod.logDir);
    client?.close();
    await project?.remove();
    network?.remove();
  });

  it('turns healthy: its healthcheck asks the shim for Status over the socket', async () => {
    await waitFor('the shim service to be healthy', async () => (await health()) === 'healthy', { timeoutMs: 90_000, intervalMs: 500 });
    const log = (await run('docker', ['inspect', '-f', '{{range .State.Health.Log}}{{.Output}}{{end}}', await project.containerId('shim')])).stdout;
    assert.match(log, /healthy: RuntimeReady=true NetworkReady=true/);
  });

  it('runs a pod on the host’s CNI network, and a container in it, for a client on the host', async () => {
    pod = await startTestPod(client, testRun, 'svc');
    const { containerId } = await client.runtime.CreateContainer({ podSandboxId: pod.id, config: busybox(testRun, 'c', SLEEP_FOREVER), sandboxConfig: pod.config });
    await client.runtime.StartContainer({ containerId });
    const { status } = await client.runtime.PodSandboxStatus({ podSandboxId: pod.id });
    const prefix = network.subnet.split('.').slice(0, 3).join('.') + '.';
    assert.ok(status?.network?.ip.startsWith(prefix), `pod address ${status?.network?.ip} in ${network.subnet}`);
    assert.equal(network.veths().length, 1, 'one veth on the test bridge');
    const res = await client.runtime.ExecSync({ containerId, cmd: ['hostname'], timeout: 10 });
    assert.equal(res.stdout.toString().trim(), 'svc');
  });

  it('lists the pod again after the service restarts', async () => {
    await project.compose(['--profile', 'host', 'restart', 'shim']);
    const { items } = await waitFor(
      'the restarted shim to answer',
      async () => client.runtime.ListPodSandbox({ filter: { id: pod!.id } }),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    assert.deepEqual(
      items.map((p) => p.state),
      ['SANDBOX_READY'],
    );
  });

  it('tears the pod down through the shim and leaves nothing after `down -v`', async () => {
    await client.runtime.StopPodSandbox({ podSandboxId: pod!.id });
    await client.runtime.RemovePodSandbox({ podSandboxId: pod!.id });
    removePaths(pod!.logDir);
    pod = undefined;
    assert.deepEqual(network.veths(), []);
    assert.deepEqual(network.reservations(), []);
    await project.compose(['--profile', 'host', 'down', '-v', '--timeout', '20']);
    assert.deepEqual(await leftoversOf(footprint!, project), []);
    assert.equal(fs.existsSync(socket), false, 'the shim removed its socket on SIGTERM');
  });
});
