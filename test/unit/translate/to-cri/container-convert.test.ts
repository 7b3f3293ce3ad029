import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container } from '../../../../src/cri/types';
import { containerStateOf, objectFromSummary } from '../../../../src/object-store/shim-objects';
import type { ContainerInspect, ContainerSummary } from '../../../../src/docker/types';
import { toDockerUpdate } from '../../../../src/translate/to-docker/container-resources';
import {
  containerFromObject,
  containerStatusFromInspect,
  mountsFromInspect,
  stateOf,
  userFromProcStatus,
} from '../../../../src/translate/to-cri/container-convert';
import { UnimplementedError } from '../../../../src/errors';
import { toDockerLabels } from '../../../../src/conventions/labels';
import { inspectDoc, type DockerState, type InspectOverrides } from '../../../support/fixtures/docker-container';

const SANDBOX = 'b'.repeat(64);

function inspect(state: Partial<DockerState>, over: InspectOverrides = {}): ContainerInspect {
  return inspectDoc({
    Name: '/k8s_app_web_default_u-1_3',
    Created: '2026-11-22T02:04:17.123456789Z',
    Image: 'sha256:feed',
    State: { Status: 'running', ...state },
    Config: {
      Image: 'busybox:1',
      Labels: { 'io.kubernetes.docker.type': 'container', 'io.kubernetes.sandbox.id': SANDBOX, 'io.kubernetes.container.logpath': '/var/log/pods/x/app/3.log', tier: 'web', 'annotation.note': 'n' },
      StopSignal: 'SIGUSR1',
    },
    HostConfig: { CpuPeriod: 100000, CpuQuota: 50000, CpuShares: 512, Memory: 1024, MemorySwap: 1024, OomScoreAdj: 10, CpusetCpus: '0', CpusetMems: '' },
    Mounts: [{ Type: 'bind', Source: '/srv', Destination: '/data', Mode: 'ro,Z', RW: false, Propagation: 'rslave' }],
    ...over,
  });
}

const image = { id: 'sha256:feed', ref: 'busybox@sha256:abc' };

describe('container status conversion', () => {
  it('reports a mount recursively read-only only when its create request asked for it (API 1.44 bind options)', () => {
    const doc = {
      Mounts: [
        { Type: 'bind', Source: '/srv/a', Destination: '/a', Mode: '', RW: false, Propagation: 'rprivate' },
        { Type: 'bind', Source: '/srv/b', Destination: '/b', Mode: '', RW: false, Propagation: 'rprivate' },
      ],
      HostConfig: {
        Mounts: [
          { Type: 'bind', Source: '/srv/a', Target: '/a', ReadOnly: true, BindOptions: { ReadOnlyForceRecursive: true } },
          { Type: 'bind', Source: '/srv/b', Target: '/b', ReadOnly: true, BindOptions: { ReadOnlyNonRecursive: true } },
        ],
      },
    } as unknown as ContainerInspect;
    assert.deepEqual(mountsFromInspect(doc), [
      { containerPath: '/a', hostPath: '/srv/a', readonly: true, recursiveReadOnly: true, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' },
      { containerPath: '/b', hostPath: '/srv/b', readonly: true, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' },
    ]);
  });

  it('reports image volumes as their create request gave them, after the binds (API 1.48, sub-paths 1.49)', () => {
    const doc = {
      Mounts: [
        { Type: 'image', Source: '', Destination: '/tools', Mode: '', RW: false, Propagation: 'rprivate' },
        { Type: 'bind', Source: '/srv/a', Destination: '/a', Mode: '', RW: true, Propagation: 'rprivate' },
        { Type: 'image', Source: '', Destination: '/bin-only', Mode: '', RW: false, Propagation: 'rprivate' },
      ],
      HostConfig: {
        Mounts: [
          { Type: 'image', Source: 'registry.local/tools:1', Target: '/tools', ReadOnly: true },
          { Type: 'image', Source: 'sha256:beef', Target: '/bin-only', ReadOnly: true, ImageOptions: { Subpath: 'usr/bin' } },
        ],
      },
    } as unknown as ContainerInspect;
    assert.deepEqual(mountsFromInspect(doc), [
      { containerPath: '/a', hostPath: '/srv/a', readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' },
      { containerPath: '/tools', image: { image: 'registry.local/tools:1' }, readonly: true, propagation: 'PROPAGATION_PRIVATE' },
      { containerPath: '/bin-only', image: { image: 'sha256:beef' }, readonly: true, imageSubPath: 'usr/bin', propagation: 'PROPAGATION_PRIVATE' },
    ]);
  });

  it('maps Docker states to CRI states', () => {
    assert.equal(stateOf(inspect({ Status: 'created' }).State), 'CONTAINER_CREATED');
    assert.equal(stateOf(inspect({ Status: 'created', Error: 'exec: no such file' }).State), 'CONTAINER_EXITED');
    assert.equal(stateOf(inspect({ Status: 'running', Running: true }).State), 'CONTAINER_RUNNING');
    assert.equal(stateOf(inspect({ Status: 'exited' }).State), 'CONTAINER_EXITED');
    assert.equal(stateOf(inspect({ Status: 'removing' }).State), 'CONTAINER_UNKNOWN');
    assert.deepEqual(['created', 'running', 'paused', 'exited', 'dead', 'removing'].map(containerStateOf), [
      'CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN',
    ]);
  });

  it('builds the full status of an exited container', () => {
    const s = containerStatusFromInspect(inspect({ Status: 'exited', ExitCode: 2, StartedAt: '2026-11-22T02:04:18Z', FinishedAt: '2026-11-22T02:04:19.5Z' }), image, undefined);
    assert.equal(s.id, 'c'.repeat(64));
    assert.deepEqual(s.metadata, { name: 'app', attempt: 3 });
    assert.deepEqual([s.state, s.exitCode, s.reason], ['CONTAINER_EXITED', 2, 'Error']);
    const sec = (t: string) => String(Date.parse(t) / 1000);
    assert.deepEqual([s.createdAt, s.startedAt, s.finishedAt], [
      `${sec('2026-11-22T02:04:17Z')}123456789`,
      `${sec('2026-11-22T02:04:18Z')}000000000`,
      `${sec('2026-11-22T02:04:19Z')}500000000`,
    ]);
    assert.deepEqual([s.image, s.imageRef, s.imageId], [{ image: 'busybox:1' }, 'busybox@sha256:abc', 'sha256:feed']);
    assert.deepEqual(s.labels, { tier: 'web' });
    assert.deepEqual(s.annotations, { note: 'n' });
    assert.equal(s.logPath, '/var/log/pods/x/app/3.log');
    assert.deepEqual(s.mounts, [{ containerPath: '/data', hostPath: '/srv', readonly: true, selinuxRelabel: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER' }]);
    assert.equal(s.resources?.linux?.cpuQuota, '50000');
    assert.equal(s.stopSignal, 'SIGNAL_SIGUSR1');
  });

  describe("an image's labels, which Docker merges into the container's", () => {
    const NAME = 'k8s_app_web_default_u-1_3';
    const imageLabels = {
      'io.kubernetes.container.logpath': '/etc/ld.so.preload',
      'io.kubernetes.pod.namespace': 'kube-system',
      'io.kubernetes.container.name': 'kube-apiserver',
      'annotation.io.kubernetes.container.preStopHandler': '{"exec":{"command":["x"]}}',
      maintainer: 'someone',
    };
    /** The container's labels as Docker reports them: the image's, then the create request's over them. */
    const merged = (own: Record<string, string>) => inspect({ Running: true }, { Config: { Image: 'img', Labels: { ...imageLabels, ...own } } } as InspectOverrides);
    const created = (logPath: string) =>
      toDockerLabels({ tier: 'web' }, {}, { 'io.kubernetes.docker.type': 'container', 'io.kubernetes.sandbox.id': SANDBOX, 'io.kubernetes.container.logpath': logPath }, NAME);

    it('reports only what the shim wrote for a container it recorded: no log path, no label or annotation of the image', () => {
      const s = containerStatusFromInspect(merged(created('')), { ...image, labels: imageLabels }, undefined);
      assert.equal(s.logPath, '');
      assert.deepEqual(s.labels, { tier: 'web' });
      assert.deepEqual(s.annotations, {});
      assert.deepEqual(s.metadata, { name: 'app', attempt: 3 });
      const own = containerStatusFromInspect(merged(created('/var/log/pods/x/app/3.log')), { ...image, labels: imageLabels }, undefined);
      assert.equal(own.logPath, '/var/log/pods/x/app/3.log');
    });

    it('lists a recorded container with its own labels and pod only', () => {
      const doc = merged({ ...created(''), 'io.kubernetes.sandbox.id': SANDBOX });
      const summary = { Id: doc.Id, Names: [`/${NAME}`], Image: 'img', ImageID: 'sha256:feed', Created: 1, State: 'running', Labels: doc.Config.Labels } as unknown as ContainerSummary;
      const c = containerFromObject(objectFromSummary(summary)!);
      assert.deepEqual([c.labels, c.annotations, c.podSandboxId], [{ tier: 'web' }, {}, SANDBOX]);
    });

    it("reads a container from before the record (an older shim's, cri-dockerd's) as it stands, but for a log path that is the image's", () => {
      const legacy = { 'io.kubernetes.docker.type': 'container', 'io.kubernetes.sandbox.id': SANDBOX, tier: 'web' };
      assert.equal(containerStatusFromInspect(merged(legacy), { ...image, labels: imageLabels }, undefined).logPath, '');
      const ownPath = { ...legacy, 'io.kubernetes.container.logpath': '/var/log/pods/x/app/3.log' };
      assert.equal(containerStatusFromInspect(merged(ownPath), { ...image, labels: imageLabels }, undefined).logPath, '/var/log/pods/x/app/3.log');
      // A record the image carries names another container: not believed.
      const forged = { ...imageLabels, 'io.cri-docker-shim.own-labels': JSON.stringify({ name: 'k8s_other_x_y_z_0', keys: Object.keys(imageLabels) }) };
      const s = containerStatusFromInspect(inspect({ Running: true }, { Config: { Image: 'img', Labels: { ...forged, ...legacy } } } as InspectOverrides), { ...image, labels: forged }, undefined);
      assert.equal(s.logPath, '');
    });
  });

  it('gives the exit reasons Completed, OOMKilled and ContainerCannotRun', () => {
    assert.equal(containerStatusFromInspect(inspect({ Status: 'exited', StartedAt: '2026-11-22T02:04:18Z' }), image, undefined).reason, 'Completed');
    assert.equal(containerStatusFromInspect(inspect({ Status: 'exited', ExitCode: 137, OOMKilled: true, StartedAt: '2026-11-22T02:04:18Z' }), image, undefined).reason, 'OOMKilled');
    const cannot = containerStatusFromInspect(inspect({ Status: 'created', ExitCode: 127, Error: 'exec: "nope": not found' }), image, undefined);
    assert.deepEqual([cannot.state, cannot.reason, cannot.message], ['CONTAINER_EXITED', 'ContainerCannotRun', 'exec: "nope": not found']);
    const running = containerStatusFromInspect(inspect({ Running: true, ExitCode: 0 }), image, { linux: { uid: '1', gid: '2', supplementalGroups: [] } });
    assert.deepEqual([running.reason, running.user?.linux?.uid], ['', '1']);
  });

  it("says OOMKilled for a run the OOM killer ended, as Docker's flag or its event tells, and for no other exit", () => {
    const exited = (over: object) => inspect({ Status: 'exited', StartedAt: '2026-11-22T02:04:18Z', ...over });
    const reason = (over: object, oomEvent: boolean) => containerStatusFromInspect(exited(over), image, undefined, { oomKilled: oomEvent }).reason;
    assert.equal(reason({ ExitCode: 137, OOMKilled: true }, false), 'OOMKilled', "Docker's flag");
    assert.equal(reason({ ExitCode: 137, OOMKilled: false }, true), 'OOMKilled', 'the event, when the flag lost the race with the exit');
    assert.equal(reason({ ExitCode: 137, OOMKilled: false }, false), 'Error', 'a SIGKILL from anyone else');
    assert.equal(reason({ ExitCode: 1, OOMKilled: true }, true), 'Error', 'the process exited by itself after the killer took a child');
    assert.equal(reason({ ExitCode: 0, OOMKilled: false }, true), 'Completed');
    const running = containerStatusFromInspect(inspect({ Running: true, ExitCode: 0 }), image, undefined, { oomKilled: true });
    assert.equal(running.reason, '', 'a child killed in a running container is no reason yet');
  });

  it('reads the process identity from /proc/<pid>/status', () => {
    const text = 'Name:\tsh\nUid:\t1234\t1234\t1234\t1234\nGid:\t99\t99\t99\t99\nGroups:\t5 6 99 \n';
    assert.deepEqual(userFromProcStatus(text), { linux: { uid: '1234', gid: '99', supplementalGroups: ['5', '6', '99'] } });
    assert.equal(userFromProcStatus('Name: x'), undefined);
  });

  it('lists a container from its list entry', () => {
    const summary = {
      Id: 'c'.repeat(64), Names: ['/k8s_app_web_default_u-1_3'], Image: 'busybox:1', ImageID: 'sha256:feed', Created: 1795312257, State: 'running',
      Labels: { 'io.kubernetes.docker.type': 'container', 'io.kubernetes.sandbox.id': SANDBOX, tier: 'web', 'annotation.note': 'x' },
    } as unknown as ContainerSummary;
    const c: Container = containerFromObject(objectFromSummary(summary)!);
    assert.deepEqual(c, {
      id: 'c'.repeat(64),
      podSandboxId: SANDBOX,
      metadata: { name: 'app', attempt: 3 },
      image: { image: 'busybox:1' },
      imageRef: 'sha256:feed',
      imageId: 'sha256:feed',
      state: 'CONTAINER_RUNNING',
      createdAt: '1795312257000000000',
      labels: { tier: 'web' },
      annotations: { note: 'x' },
    });
  });

  it('builds a resource update, refusing a changed oom_score_adj', () => {
    const current = inspect({ Running: true });
    const r = { cpuPeriod: '0', cpuQuota: '20000', cpuShares: '0', memoryLimitInBytes: '67108864', oomScoreAdj: '10', cpusetCpus: '', cpusetMems: '', hugepageLimits: [], unified: {}, memorySwapLimitInBytes: '0' };
    assert.deepEqual(toDockerUpdate('linux', r, current), { CpuQuota: 20000, Memory: 67108864, MemorySwap: 67108864 });
    assert.throws(() => toDockerUpdate('linux', { ...r, oomScoreAdj: '11' }, current), (e: unknown) => e instanceof UnimplementedError && /linux.oom_score_adj/.test(e.message));
  });
});
