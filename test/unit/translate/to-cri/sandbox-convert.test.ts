// Docker's view of a pause container (and its checkpoint) turned into CRI sandboxes and
// statuses; the list filter; the per-key lock. No Docker.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { SandboxCheckpoint } from '../../../../src/checkpoint/checkpoint';
import type { ContainerInspect, ContainerSummary } from '../../../../src/docker/types';
import { objectFromSummary, type ShimObject } from '../../../../src/object-store/shim-objects';
import {
  podRefOf,
  sandboxFromCheckpoint,
  sandboxFromObject,
  statusFromCheckpoint,
  statusFromInspect,
} from '../../../../src/translate/to-cri/sandbox-convert';
import { KeyedLock } from '../../../../src/util/keyed-lock';
import { toDockerLabels } from '../../../../src/conventions/labels';
import { sandboxCheckpoint } from '../../../support/fixtures/checkpoint';
import { inspectDoc, runningState } from '../../../support/fixtures/docker-container';

const ID = '0123456789abcdef'.repeat(4);
const LABELS = {
  app: 'web',
  'annotation.note': 'x',
  'io.kubernetes.docker.type': 'podsandbox',
  'io.kubernetes.cri-docker-shim.runtime-handler': 'runc',
};

function summary(over: Partial<ContainerSummary> = {}): ContainerSummary {
  return {
    Id: ID,
    Names: ['/k8s_POD_web_default_uid-1_3'],
    Image: 'pause',
    ImageID: 'sha256:x',
    Command: '/pause',
    Created: 1763776000,
    Ports: [],
    Labels: LABELS,
    State: 'running',
    Status: 'Up',
    HostConfig: { NetworkMode: 'default' },
    NetworkSettings: { Networks: {} },
    Mounts: [],
    ...over,
  };
}

/** The pause container as the typed query gives it from Docker's list. */
function listed(over: Partial<ContainerSummary> = {}): ShimObject {
  return objectFromSummary(summary(over))!;
}

const checkpoint = (over: Partial<SandboxCheckpoint> = {}): SandboxCheckpoint => sandboxCheckpoint({ id: ID, ...over });

function inspect(running: boolean, hostConfig: Record<string, string>): ContainerInspect {
  return inspectDoc({
    Id: ID,
    Name: '/k8s_POD_web_default_uid-1_3',
    Created: '2025-11-22T01:46:40.123456789Z',
    State: running ? runningState() : { Status: 'exited' },
    Config: { Labels: LABELS, Image: 'pause' },
    HostConfig: hostConfig,
  });
}

describe('sandbox conversions', () => {
  it('reads a listed pause container back as the sandbox it was made from', () => {
    assert.deepEqual(sandboxFromObject(listed(), undefined), {
      id: ID,
      metadata: { name: 'web', namespace: 'default', uid: 'uid-1', attempt: 3 },
      state: 'SANDBOX_READY',
      createdAt: '1763776000000000000',
      labels: { app: 'web' },
      annotations: { note: 'x' },
      runtimeHandler: 'runc',
    });
    assert.equal(sandboxFromObject(listed({ State: 'exited' }), undefined).state, 'SANDBOX_NOTREADY');
    assert.equal(sandboxFromObject(listed({ State: 'created' }), undefined).state, 'SANDBOX_NOTREADY');
  });

  it('takes the nanosecond creation time from the checkpoint when there is one', () => {
    assert.equal(sandboxFromObject(listed(), checkpoint()).createdAt, '1763776000123456789');
  });

  it('takes identity, time and annotations from the pause container over the blanks of a checkpoint read from cri-dockerd', () => {
    const adopted = checkpoint({ uid: '', attempt: 0, createdAt: '0', runtimeHandler: '', labels: {}, annotations: {}, fromCriDockerd: true });
    assert.deepEqual(sandboxFromObject(listed(), adopted), sandboxFromObject(listed(), undefined));
    assert.deepEqual(podRefOf(ID, '/k8s_POD_web_default_uid-1_3', LABELS, adopted), {
      podName: 'web',
      podNamespace: 'default',
      podUid: 'uid-1',
      sandboxId: ID,
      annotations: { note: 'x' },
    });
    // The container gone: what cri-dockerd's checkpoint holds, as cri-dockerd lists it.
    assert.deepEqual(sandboxFromCheckpoint(adopted).metadata, { name: 'web', namespace: 'default', uid: '', attempt: 0 });
  });

  it('falls back to the checkpoint’s metadata for a name it cannot parse', () => {
    assert.deepEqual(sandboxFromObject(listed({ Names: ['/renamed'] }), checkpoint()).metadata, {
      name: 'web',
      namespace: 'default',
      uid: 'uid-1',
      attempt: 3,
    });
  });

  it('reports a checkpoint-only sandbox as NOTREADY with its recorded identity', () => {
    const s = sandboxFromCheckpoint(checkpoint());
    assert.equal(s.state, 'SANDBOX_NOTREADY');
    assert.deepEqual(s.labels, { app: 'web' });
    assert.equal(s.createdAt, '1763776000123456789');
    const status = statusFromCheckpoint(checkpoint());
    assert.equal(status.linux?.namespaces?.options?.network, 'NODE');
    assert.deepEqual(status.network, { ip: '', additionalIps: [] });
  });

  it("gives a recorded sandbox's own labels, annotations and runtime handler, not its image's", () => {
    const own = toDockerLabels({ app: 'web' }, { note: 'x' }, { 'io.kubernetes.docker.type': 'podsandbox', 'io.kubernetes.cri-docker-shim.runtime-handler': '' }, 'k8s_POD_web_default_uid-1_3');
    const image = { 'io.cri-docker-shim.pause': 'built-locally', 'io.kubernetes.cri-docker-shim.runtime-handler': 'kata', 'annotation.evil': 'y' };
    const doc = inspectDoc({ Id: ID, Name: '/k8s_POD_web_default_uid-1_3', State: runningState(), Config: { Labels: { ...image, ...own }, Image: 'pause' }, HostConfig: {} });
    const s = statusFromInspect(doc, undefined, []);
    assert.deepEqual([s.labels, s.annotations, s.runtimeHandler], [{ app: 'web' }, { note: 'x' }, '']);
    const l = sandboxFromObject(listed({ Labels: { ...image, ...own } }), undefined);
    assert.deepEqual([l.labels, l.annotations, l.runtimeHandler], [{ app: 'web' }, { note: 'x' }, '']);
    assert.deepEqual(podRefOf(ID, doc.Name, doc.Config.Labels, undefined).annotations, { note: 'x' });
  });

  it('builds a status from inspect: state, nanosecond creation time, IPs, namespaces', () => {
    const s = statusFromInspect(inspect(true, { NetworkMode: 'default', PidMode: '', IpcMode: 'shareable' }), undefined, ['172.17.0.5', 'fd00::5']);
    assert.equal(s.state, 'SANDBOX_READY');
    assert.equal(s.createdAt, '1763776000123456789');
    assert.deepEqual(s.network, { ip: '172.17.0.5', additionalIps: [{ ip: 'fd00::5' }] });
    assert.deepEqual(s.linux?.namespaces?.options, { network: 'POD', pid: 'CONTAINER', ipc: 'POD' });
    assert.deepEqual(s.annotations, { note: 'x' });
    const host = statusFromInspect(inspect(false, { NetworkMode: 'host', PidMode: 'host', IpcMode: 'host' }), undefined, []);
    assert.equal(host.state, 'SANDBOX_NOTREADY');
    assert.deepEqual(host.linux?.namespaces?.options, { network: 'NODE', pid: 'NODE', ipc: 'NODE' });
  });
});

describe('KeyedLock', () => {
  it('runs work for one key one at a time, and different keys side by side', async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    let releaseA!: () => void;
    const gateA = new Promise<void>((r) => (releaseA = r));
    const first = lock.run('a', async () => {
      events.push('a1 start');
      await gateA;
      events.push('a1 end');
    });
    const second = lock.run('a', async () => {
      events.push('a2 start');
    });
    const other = lock.run('b', async () => {
      events.push('b start');
    });
    await other;
    assert.deepEqual(events, ['a1 start', 'b start'], 'b did not wait for a; a2 did');
    releaseA();
    await Promise.all([first, second]);
    assert.deepEqual(events, ['a1 start', 'b start', 'a1 end', 'a2 start']);
  });

  it('keeps going after a failure and passes the failure to its caller only', async () => {
    const lock = new KeyedLock();
    await assert.rejects(lock.run('k', async () => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await lock.run('k', async () => 7), 7);
  });
});
