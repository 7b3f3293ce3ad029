import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import {
  diskFullOr,
  DockerConflictError,
  DockerNotFoundError,
  DockerServerError,
  DockerTimeoutError,
  DockerUnreachableError,
  InvalidArgumentError,
  NotFoundError,
  toGrpcStatus,
  UnimplementedError,
} from '../../../src/errors';
import { containerLogPath, fromDockerLabels, hasTypeLabel, logPathNeedsImage, matchesLabelSelector, shimLabels, toDockerLabels } from '../../../src/conventions/labels';
import { containerDockerName, parseContainerDockerName, parseSandboxDockerName, sandboxDockerName } from '../../../src/conventions/naming';
import { validateId } from '../../../src/conventions/ids';
import { rfc3339ToNanos, secondsToNanos } from '../../../src/util/time';

describe('toGrpcStatus', () => {
  const cases: Array<[Error, Code]> = [
    [new InvalidArgumentError('x'), Code.INVALID_ARGUMENT],
    [new NotFoundError('x'), Code.NOT_FOUND],
    [new UnimplementedError('x'), Code.UNIMPLEMENTED],
    [new DockerNotFoundError('x'), Code.NOT_FOUND],
    [new DockerConflictError('x'), Code.ALREADY_EXISTS],
    [new DockerTimeoutError('x'), Code.DEADLINE_EXCEEDED],
    [new DockerUnreachableError('x'), Code.UNAVAILABLE],
    [new DockerServerError('x', 500), Code.UNKNOWN],
  ];
  for (const [err, code] of cases) {
    it(`${err.name} -> ${Code[code]}`, () => assert.deepEqual(toGrpcStatus(err), { code, details: 'x' }));
  }
  it('reports a full disk (ENOSPC, EDQUOT) as RESOURCE_EXHAUSTED naming the directory; other failures stay as they are', () => {
    const errno = (code: string, syscall: string): NodeJS.ErrnoException =>
      Object.assign(new Error(`${code}: no space left on device, ${syscall}`), { code, syscall });
    assert.deepEqual(toGrpcStatus(diskFullOr(errno('ENOSPC', 'write'), '/var/lib/shim/sandbox')), {
      code: Code.RESOURCE_EXHAUSTED,
      details: 'no space left on device in /var/lib/shim/sandbox (ENOSPC on write)',
    });
    assert.deepEqual(toGrpcStatus(diskFullOr(errno('EDQUOT', 'open'), '/r')), {
      code: Code.RESOURCE_EXHAUSTED,
      details: 'disk quota exceeded in /r (EDQUOT on open)',
    });
    const eio = errno('EIO', 'write');
    assert.equal(diskFullOr(eio, '/r'), eio);
  });
  it('reports unexpected errors as INTERNAL with their message', () => {
    assert.deepEqual(toGrpcStatus(new TypeError('boom')), { code: Code.INTERNAL, details: 'internal error: boom' });
    assert.deepEqual(toGrpcStatus('text'), { code: Code.INTERNAL, details: 'internal error: text' });
  });
});

describe('dockershim names', () => {
  const pod = { name: 'web', namespace: 'default', uid: '0b1c-22', attempt: 3 };
  it('round-trips a sandbox name', () => {
    assert.equal(sandboxDockerName(pod), 'k8s_POD_web_default_0b1c-22_3');
    assert.deepEqual(parseSandboxDockerName('/k8s_POD_web_default_0b1c-22_3'), pod);
  });
  it('round-trips a container name', () => {
    assert.equal(containerDockerName('nginx', 1, pod), 'k8s_nginx_web_default_0b1c-22_1');
    assert.deepEqual(parseContainerDockerName('/k8s_nginx_web_default_0b1c-22_1'), {
      containerName: 'nginx',
      attempt: 1,
      pod: { name: 'web', namespace: 'default', uid: '0b1c-22' },
    });
  });
  it('refuses names that are not ours', () => {
    assert.equal(parseSandboxDockerName('/k8s_nginx_web_default_uid_1'), undefined);
    assert.equal(parseSandboxDockerName('/my_container'), undefined);
    assert.equal(parseContainerDockerName('/k8s_a_b_c_d_notanumber'), undefined);
  });
});

describe('labels', () => {
  it('gives back exactly the labels and annotations that were stored', () => {
    const labels = { app: 'web', 'io.kubernetes.pod.name': 'web' };
    const annotations = { 'kubernetes.io/config.seen': '2026-11-22', note: 'a=b' };
    const docker = toDockerLabels(labels, annotations, { 'io.kubernetes.docker.type': 'podsandbox' }, 'k8s_POD_web_default_u_0');
    assert.equal(docker['annotation.note'], 'a=b');
    assert.deepEqual(fromDockerLabels(docker), { labels, annotations });
  });

  it("keeps only the labels the shim recorded for the object it names, whatever the image merged in", () => {
    const own = toDockerLabels({ app: 'web' }, { note: 'n' }, { 'io.kubernetes.container.logpath': '' }, '/k8s_c_p_ns_u_0');
    const image = { app: 'other', extra: '1', 'annotation.x': 'y', 'io.kubernetes.container.logpath': '/etc/passwd' };
    const docker = { ...image, ...own };
    assert.deepEqual(fromDockerLabels(shimLabels(docker, '/k8s_c_p_ns_u_0')), { labels: { app: 'web' }, annotations: { note: 'n' } });
    assert.equal(containerLogPath(docker, 'k8s_c_p_ns_u_0', image), '');
    assert.equal(logPathNeedsImage(docker, 'k8s_c_p_ns_u_0'), false);
    // Another object's name, or a record that is no record: read as it stands (an older shim's, cri-dockerd's).
    assert.equal(shimLabels(docker, 'k8s_c_p_ns_u_1'), docker);
    assert.equal(shimLabels({ ...docker, 'io.cri-docker-shim.own-labels': 'not json' }, 'k8s_c_p_ns_u_0')['extra'], '1');
  });

  it("takes an unrecorded container's log path for the image's when the image carries the same, and keeps it otherwise", () => {
    const legacy = { 'io.kubernetes.container.logpath': '/var/log/pods/p/c/0.log' };
    assert.equal(logPathNeedsImage(legacy, 'k8s_c'), true);
    assert.equal(containerLogPath(legacy, 'k8s_c', { 'io.kubernetes.container.logpath': '/var/log/pods/p/c/0.log' }), '');
    assert.equal(containerLogPath(legacy, 'k8s_c', {}), '/var/log/pods/p/c/0.log');
    assert.equal(containerLogPath(legacy, 'k8s_c', undefined), '/var/log/pods/p/c/0.log', 'the image is gone');
    assert.equal(logPathNeedsImage({}, 'k8s_c'), false);
    assert.equal(containerLogPath({}, 'k8s_c', undefined), '');
  });
  it('matches label selectors by every key', () => {
    assert.equal(matchesLabelSelector({ a: '1', b: '2' }, { a: '1' }), true);
    assert.equal(matchesLabelSelector({ a: '1' }, { a: '1', b: '2' }), false);
    assert.equal(matchesLabelSelector({ a: '1' }, {}), true);
    assert.equal(matchesLabelSelector({ a: '1' }, null), true);
  });
  it('takes a container for the shim\'s by its type label alone', () => {
    assert.equal(hasTypeLabel({ 'io.kubernetes.docker.type': 'podsandbox' }), true);
    assert.equal(hasTypeLabel({ 'io.kubernetes.sandbox.id': 'x' }), false);
    assert.equal(hasTypeLabel({ tier: 'web' }), false);
    assert.equal(hasTypeLabel(null), false);
  });
});

describe('validateId', () => {
  it('accepts hex IDs and prefixes', () => assert.equal(validateId('pod_sandbox_id', 'abc123'), 'abc123'));
  for (const bad of ['', '../etc', 'ABC', 'a'.repeat(65), 'abc/def']) {
    it(`refuses ${JSON.stringify(bad)}`, () => assert.throws(() => validateId('pod_sandbox_id', bad), InvalidArgumentError));
  }
});

describe('times', () => {
  it('keeps nanosecond precision', () => {
    assert.equal(rfc3339ToNanos('2026-11-22T02:04:17.123456789Z'), '1795313057123456789');
    assert.equal(rfc3339ToNanos('2026-11-22T02:04:17Z'), '1795313057000000000');
    assert.equal(rfc3339ToNanos('2026-11-22T03:04:17.5+01:00'), '1795313057500000000');
  });
  it('maps Docker zero time and garbage to 0', () => {
    assert.equal(rfc3339ToNanos('0001-01-01T00:00:00Z'), '0');
    assert.equal(rfc3339ToNanos('yesterday'), '0');
    assert.equal(rfc3339ToNanos(undefined), '0');
  });
  it('converts list timestamps (seconds)', () => assert.equal(secondsToNanos(1795313057), '1795313057000000000'));
});
