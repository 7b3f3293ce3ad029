import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { BIND_OPTIONS_API_VERSION, IMAGE_MOUNT_API_VERSION, isApiVersionAtLeast } from '../../src/docker/docker-version';
import { tempDir } from '../support/temp';
import { status as Code } from '@grpc/grpc-js';
import { describe, it } from 'node:test';
import { rejectsWith } from '../support/client';
import { TEST_LABEL, testLabels } from '../support/cleanup';
import { dockerApi, TEST_BUSYBOX_IMAGE } from '../support/images';
import { useShim } from '../support/fixture';
import { busybox, runContainer, SLEEP_FOREVER, waitExited } from '../support/pods';

describe('container lifecycle', () => {
  const f = useShim({ pod: 'life' });
  const { run } = f;

  it('creates, starts, reports, stops and removes a container', async () => {
    const c = f.client.runtime;
    const config = busybox(run, 'web', { ...SLEEP_FOREVER, annotations: { 'kubernetes.io/config': 'a=b' }, labels: { ...busybox(run, 'x').labels, app: 'web' } });
    const { containerId } = await c.CreateContainer({ podSandboxId: f.pod.id, config, sandboxConfig: f.pod.config });
    const inspect = await dockerApi().getContainer(containerId).inspect();
    assert.equal(inspect.Name, `/k8s_web_life_cds-test_${run}-life_0`);

    let { status } = await c.ContainerStatus({ containerId });
    assert.equal(status!.state, 'CONTAINER_CREATED');
    assert.deepEqual(status!.metadata, { name: 'web', attempt: 0 });
    assert.deepEqual(status!.labels, config.labels);
    assert.deepEqual(status!.annotations, { 'kubernetes.io/config': 'a=b' });
    assert.equal(status!.image!.image, TEST_BUSYBOX_IMAGE);
    assert.match(status!.imageId, /^sha256:/);
    assert.equal(status!.logPath, `${f.pod.logDir}/web/0.log`);

    await c.StartContainer({ containerId });
    ({ status } = await c.ContainerStatus({ containerId, verbose: true }).then((r) => {
      assert.ok(JSON.parse(r.info.info!).pid > 0, 'verbose info has the pid');
      return r;
    }));
    assert.equal(status!.state, 'CONTAINER_RUNNING');
    assert.ok(BigInt(status!.startedAt) >= BigInt(status!.createdAt));
    assert.equal(status!.user?.linux?.uid, '0');

    await c.StopContainer({ containerId, timeout: 1 });
    ({ status } = await c.ContainerStatus({ containerId }));
    assert.equal(status!.state, 'CONTAINER_EXITED');
    assert.equal(status!.exitCode, 137, 'sleep ignores SIGTERM as PID 1, so it was killed');
    assert.equal(status!.reason, 'Error');
    assert.ok(BigInt(status!.finishedAt) >= BigInt(status!.startedAt));

    await c.StopContainer({ containerId, timeout: 1 });
    await c.RemoveContainer({ containerId });
    await c.RemoveContainer({ containerId });
    await c.StopContainer({ containerId, timeout: 1 });
    await assert.rejects(c.ContainerStatus({ containerId }), rejectsWith(Code.NOT_FOUND));
  });

  it('reports Completed with exit code 0, and Error with the exit code', async () => {
    const c = f.client.runtime;
    const ok = await runContainer(f.client, f.pod, busybox(run, 'ok', { command: ['true'] }));
    const bad = await runContainer(f.client, f.pod, busybox(run, 'bad', { command: ['sh', '-c', 'exit 3'] }));
    const okStatus = await waitExited(f.client, ok);
    const badStatus = await waitExited(f.client, bad);
    assert.deepEqual([okStatus.exitCode, okStatus.reason], [0, 'Completed']);
    assert.deepEqual([badStatus.exitCode, badStatus.reason], [3, 'Error']);
    await c.RemoveContainer({ containerId: ok });
    await c.RemoveContainer({ containerId: bad });
  });

  it('stops with the configured stop signal', async () => {
    const c = f.client.runtime;
    const config = busybox(run, 'stopsig', { stopSignal: 'SIGNAL_SIGUSR1', command: ['sh', '-c', 'trap "exit 0" USR1; while true; do usleep 50000; done'] });
    const id = await runContainer(f.client, f.pod, config);
    assert.equal(((await dockerApi().getContainer(id).inspect()).Config as { StopSignal?: string }).StopSignal, 'SIGUSR1');
    await c.StopContainer({ containerId: id, timeout: 60 });
    const { status } = await c.ContainerStatus({ containerId: id });
    assert.deepEqual([status!.state, status!.exitCode, status!.reason, status!.stopSignal], ['CONTAINER_EXITED', 0, 'Completed', 'SIGNAL_SIGUSR1']);
    await c.RemoveContainer({ containerId: id });
  });

  it('reports a container whose command cannot run', async () => {
    const c = f.client.runtime;
    const { containerId } = await c.CreateContainer({ podSandboxId: f.pod.id, config: busybox(run, 'cannot', { command: ['/no/such/binary'] }), sandboxConfig: f.pod.config });
    await assert.rejects(c.StartContainer({ containerId }));
    const { status } = await c.ContainerStatus({ containerId });
    assert.equal(status!.state, 'CONTAINER_EXITED');
    assert.equal(status!.reason, 'ContainerCannotRun');
    assert.match(status!.message, /no such file/);
    await c.RemoveContainer({ containerId });
  });

  it('removes a running container and forgets its log state', async () => {
    const c = f.client.runtime;
    const id = await runContainer(f.client, f.pod, busybox(run, 'rmrunning', SLEEP_FOREVER));
    const stateFile = path.join(f.shim.rootDir, 'container-logs', `${id}.json`);
    assert.ok(fs.existsSync(stateFile), 'the log follower keeps its state under the root directory');
    await c.RemoveContainer({ containerId: id });
    assert.ok(!fs.existsSync(stateFile));
    await assert.rejects(dockerApi().getContainer(id).inspect(), (e: { statusCode?: number }) => e.statusCode === 404);
  });

  it('reports OOMKilled for each container the OOM killer ended, and not for one that SIGKILLed itself', async () => {
    const memory = { linux: { resources: { memoryLimitInBytes: 16 * 1024 * 1024 } } };
    // Several at once: Docker's flag races each exit, and the report must not depend on it.
    const oomIds = await Promise.all(
      [1, 2, 3].map((n) => runContainer(f.client, f.pod, busybox(run, `oom${n}`, { command: ['sh', '-c', 'x=a; while true; do x="$x$x"; done'], ...memory }))),
    );
    // A child shell kills itself with SIGKILL and the main one exits with its status: 137, as after an OOM kill.
    const killedId = await runContainer(f.client, f.pod, busybox(run, 'sigkill', { command: ['sh', '-c', 'sh -c "kill -9 \\$\\$"; exit $?'], ...memory }));
    for (const id of oomIds) {
      const status = await waitExited(f.client, id, 60_000);
      assert.deepEqual([status.exitCode, status.reason], [137, 'OOMKilled'], id);
    }
    const killed = await waitExited(f.client, killedId);
    assert.deepEqual([killed.exitCode, killed.reason], [137, 'Error']);
    for (const id of [...oomIds, killedId]) await f.client.runtime.RemoveContainer({ containerId: id });
  });

  it('mounts an image read-only (kubelet\'s image volumes) where the engine can (API 1.48), and refuses it where it cannot', async () => {
    const c = f.client.runtime;
    const imageMounts = isApiVersionAtLeast((await dockerApi().version()).ApiVersion, IMAGE_MOUNT_API_VERSION);
    const volume = { containerPath: '/img', image: { image: TEST_BUSYBOX_IMAGE }, readonly: true };
    const config = busybox(run, 'imgvol', { ...SLEEP_FOREVER, mounts: [volume] });
    if (!imageMounts) {
      await assert.rejects(c.CreateContainer({ podSandboxId: f.pod.id, config, sandboxConfig: f.pod.config }), rejectsWith(Code.INVALID_ARGUMENT, /cannot mount an image \(it needs API 1.48/));
      return;
    }
    const id = await runContainer(f.client, f.pod, config);
    try {
      const sh = async (script: string): Promise<number> => (await c.ExecSync({ containerId: id, cmd: ['sh', '-c', script], timeout: 10 })).exitCode;
      assert.equal(await sh('test -x /img/bin/busybox'), 0, 'the image\'s files are there');
      assert.notEqual(await sh('touch /img/new'), 0, 'read-only');
      const { status } = await c.ContainerStatus({ containerId: id });
      const reported = status!.mounts!.find((m) => m.containerPath === '/img');
      assert.deepEqual([reported?.image?.image, reported?.readonly], [TEST_BUSYBOX_IMAGE, true], 'ContainerStatus reports the image volume');
    } finally {
      await c.RemoveContainer({ containerId: id });
    }
  });

  it('injects CDI devices where the engine has CDI on, and refuses them where it has not', async () => {
    const c = f.client.runtime;
    const cdi = ((await dockerApi().info()) as { CDISpecDirs?: string[] | null }).CDISpecDirs ?? [];
    const kind = 'cri-docker-shim.test/device';
    const config = busybox(run, 'cdi', { ...SLEEP_FOREVER, CDIDevices: [{ name: `${kind}=${run}` }] });
    if (cdi.length === 0) {
      await assert.rejects(c.CreateContainer({ podSandboxId: f.pod.id, config, sandboxConfig: f.pod.config }), rejectsWith(Code.INVALID_ARGUMENT, /CDI is off/));
      return;
    }
    // A CDI spec of the test's own: its one device adds an environment variable.
    const spec = path.join(cdi[0]!, `cds-test-${run}.json`);
    fs.mkdirSync(cdi[0]!, { recursive: true });
    fs.writeFileSync(spec, JSON.stringify({ cdiVersion: '0.6.0', kind, devices: [{ name: run, containerEdits: { env: [`CDS_CDI_DEVICE=${run}`] } }] }));
    let id: string | undefined;
    try {
      id = await runContainer(f.client, f.pod, config);
      // CDI edits the container's own process (an exec gets Docker's configured env, not these).
      const out = (await c.ExecSync({ containerId: id, cmd: ['sh', '-c', "tr '\\0' '\\n' < /proc/1/environ | grep '^CDS_CDI_DEVICE='"], timeout: 10 })).stdout.toString().trim();
      assert.equal(out, `CDS_CDI_DEVICE=${run}`, 'the device\'s edits were applied');
    } finally {
      if (id) await c.RemoveContainer({ containerId: id });
      fs.rmSync(spec, { force: true });
    }
  });

  it('makes a read-only mount non-recursive, and recursive only when asked where the engine can (refused where it cannot)', async () => {
    const c = f.client.runtime;
    const bindOptions = isApiVersionAtLeast((await dockerApi().version()).ApiVersion, BIND_OPTIONS_API_VERSION);
    // A host directory with a tmpfs mounted below it: a read-only bind of it leaves that
    // submount writable, a recursively read-only one does not.
    const dir = tempDir('ro-mounts');
    fs.mkdirSync(path.join(dir, 'sub'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', path.join(dir, 'sub')]);
    try {
      const plain = { hostPath: dir, containerPath: '/plain', readonly: true };
      const recursive = { hostPath: dir, containerPath: '/recursive', readonly: true, recursiveReadOnly: true };
      // As critest asks: relabelling is nothing without SELinux labelling (none on this host).
      const relabelled = { hostPath: dir, containerPath: '/relabelled', readonly: true, selinuxRelabel: true };
      const features = (await c.Status({})).runtimeHandlers.find((h) => h.name === '')!.features!;
      assert.equal(features.recursiveReadOnlyMounts, bindOptions, 'the feature is what this engine (API 1.44) and kernel (6.x) can do');
      if (!bindOptions) {
        await assert.rejects(
          c.CreateContainer({ podSandboxId: f.pod.id, config: busybox(run, 'rro', { ...SLEEP_FOREVER, mounts: [recursive] }), sandboxConfig: f.pod.config }),
          rejectsWith(Code.INVALID_ARGUMENT, /cannot make recursively read-only mounts/),
        );
      }
      const id = await runContainer(f.client, f.pod, busybox(run, 'ro', { ...SLEEP_FOREVER, mounts: bindOptions ? [plain, recursive, relabelled] : [plain, relabelled] }));
      const sh = async (script: string): Promise<number> => (await c.ExecSync({ containerId: id, cmd: ['sh', '-c', script], timeout: 10 })).exitCode;
      assert.notEqual(await sh('touch /plain/top'), 0, 'the mount itself is read-only');
      assert.equal(await sh('touch /plain/sub/file'), 0, 'its submount is not: readonly alone is not recursive');
      assert.equal(await sh('touch /relabelled/sub/file3 && ! touch /relabelled/top'), 0, 'relabelled too, on an engine without SELinux labelling');
      if (bindOptions) {
        assert.notEqual(await sh('touch /recursive/sub/file2'), 0, 'recursive_read_only makes the submount read-only too');
        const mounts = (await c.ContainerStatus({ containerId: id })).status!.mounts;
        assert.deepEqual(mounts.map((m) => [m.containerPath, m.readonly, m.recursiveReadOnly]).sort(), [['/plain', true, false], ['/recursive', true, true], ['/relabelled', true, false]]);
      }
      await c.StopContainer({ containerId: id, timeout: 0 });
      await c.RemoveContainer({ containerId: id });
    } finally {
      execFileSync('umount', [path.join(dir, 'sub')]);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad requests with the field named, leaving no container behind', async () => {
    const c = f.client.runtime;
    const create = (over: Parameters<typeof busybox>[2], podSandboxId = f.pod.id) =>
      c.CreateContainer({ podSandboxId, config: busybox(run, 'bad-input', over), sandboxConfig: f.pod.config });
    await assert.rejects(create({}, 'f'.repeat(64)), rejectsWith(Code.NOT_FOUND, /sandbox/));
    await assert.rejects(create({}, 'not-an-id'), rejectsWith(Code.INVALID_ARGUMENT, /pod_sandbox_id/));
    await assert.rejects(create({ metadata: { name: '' } }), rejectsWith(Code.INVALID_ARGUMENT, /config.metadata.name is required/));
    await assert.rejects(
      create({ logPath: '', labels: { ...testLabels(run), 'io.kubernetes.container.logpath': '/etc/ld.so.preload' } }),
      rejectsWith(Code.INVALID_ARGUMENT, /config.labels: "io.kubernetes.container.logpath" is reserved for the runtime/),
    );
    await assert.rejects(create({ image: { image: '' } }), rejectsWith(Code.INVALID_ARGUMENT, /config.image.image is required/));
    await assert.rejects(create({ image: { image: 'cds-test/absent:never' } }), rejectsWith(Code.NOT_FOUND, /cds-test\/absent:never/));
    await assert.rejects(create({ mounts: [{ hostPath: 'relative', containerPath: '/x' }] }), rejectsWith(Code.INVALID_ARGUMENT, /config.mounts\[0\].host_path/));
    await assert.rejects(create({ mounts: [{ hostPath: '', containerPath: '/x' }] }), rejectsWith(Code.INVALID_ARGUMENT, /config.mounts\[0\].host_path is required/));
    await assert.rejects(
      create({ linux: { securityContext: { capabilities: { addCapabilities: ['CAP_FLY'] } } } }),
      rejectsWith(Code.INVALID_ARGUMENT, /unknown capability "CAP_FLY"/),
    );
    await assert.rejects(
      create({ linux: { securityContext: { seccomp: { profileType: 'Localhost', localhostRef: '/nonexistent/profile.json' } } } }),
      rejectsWith(Code.INVALID_ARGUMENT, /seccomp.localhost_ref: cannot read/),
    );
    await assert.rejects(create({ linux: { securityContext: { seccompProfilePath: 'bogus' } } }), rejectsWith(Code.INVALID_ARGUMENT, /seccomp_profile_path/));
    await assert.rejects(create({ linux: { securityContext: { apparmorProfile: 'bogus' } } }), rejectsWith(Code.INVALID_ARGUMENT, /apparmor_profile/));
    await assert.rejects(create({ mounts: [{ hostPath: '/tmp', containerPath: '/x', recursiveReadOnly: true }] }), rejectsWith(Code.INVALID_ARGUMENT, /recursive_read_only needs readonly/));
    await assert.rejects(c.StartContainer({ containerId: 'e'.repeat(64) }), rejectsWith(Code.NOT_FOUND));
    await assert.rejects(c.ContainerStatus({ containerId: '' }), rejectsWith(Code.INVALID_ARGUMENT, /container_id is required/));
    const left = await dockerApi().listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${run}`], name: ['bad-input'] } });
    assert.deepEqual(left, []);
  });

  it('lists containers by every filter, combined', async () => {
    const c = f.client.runtime;
    const other = await f.startPod('other');
    const a = await runContainer(f.client, f.pod, busybox(run, 'la', { ...SLEEP_FOREVER, labels: { ...busybox(run, 'x').labels, tier: 'front' } }));
    const { containerId: b } = await c.CreateContainer({ podSandboxId: other.id, config: busybox(run, 'lb', { labels: { ...busybox(run, 'x').labels, tier: 'back' } }), sandboxConfig: other.config });
    const ids = async (filter: object) => (await c.ListContainers({ filter })).containers.map((x) => x.id).sort();
    const mine = { [TEST_LABEL]: run };
    assert.deepEqual(await ids({ labelSelector: mine }), [a, b].sort());
    assert.deepEqual(await ids({ id: a.slice(0, 12) }), [a]);
    assert.deepEqual(await ids({ podSandboxId: other.id }), [b]);
    assert.deepEqual(await ids({ labelSelector: mine, state: { state: 'CONTAINER_RUNNING' } }), [a]);
    assert.deepEqual(await ids({ labelSelector: mine, state: { state: 'CONTAINER_CREATED' } }), [b]);
    assert.deepEqual(await ids({ labelSelector: { ...mine, tier: 'back' } }), [b]);
    assert.deepEqual(await ids({ podSandboxId: f.pod.id, labelSelector: { tier: 'back' } }), []);
    const listed = (await c.ListContainers({ filter: { id: a } })).containers[0]!;
    assert.equal(listed.podSandboxId, f.pod.id);
    assert.deepEqual(listed.metadata, { name: 'la', attempt: 0 });
    assert.equal(listed.labels!.tier, 'front');
    const streamed = (await c.StreamContainers({ filter: { labelSelector: mine } })).flatMap((m) => m.containers.map((x) => x.id)).sort();
    assert.deepEqual(streamed, [a, b].sort());
    await c.RemoveContainer({ containerId: a });
    await c.RemoveContainer({ containerId: b });
  });
});
