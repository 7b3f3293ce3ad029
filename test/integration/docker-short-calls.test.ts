// The Docker client's short calls on node:http (src/docker/json-request.ts), against the real
// Docker: a container's whole life through them with docker-modem's dial never called, Docker's
// answers read as before (documents, the empty 204s, 304 and 409 and 404 as their typed errors
// with the daemon's words).
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { parseEndpoint } from '../../src/config/endpoint';
import { EngineApiClient } from '../../src/docker/engine-api-client';
import { DockerSocketPool } from '../../src/docker/socket-pool';
import { DockerConflictError, DockerNotFoundError, DockerNotModifiedError } from '../../src/errors';
import { newTestRun, removeTestContainers, testLabels, TEST_LABEL } from '../support/cleanup';
import { TEST_BUSYBOX_IMAGE } from '../support/images';
import { countModemDials, type ModemDials } from '../support/modem-dials';

const DOCKER_SOCKET = '/var/run/docker.sock';

describe('the short calls against Docker, without docker-modem', () => {
  const run = newTestRun();
  const docker = new EngineApiClient(parseEndpoint(`unix://${DOCKER_SOCKET}`), 60_000, new DockerSocketPool({ calls: 4, sessions: 4, streams: 4 }));
  let dials: ModemDials;

  before(() => {
    dials = countModemDials();
  });
  after(async () => {
    dials.stop();
    docker.close();
    await removeTestContainers({ run });
  });

  it('runs a container’s life through them, Docker’s answers read and its refusals typed, and dials the modem for none', async () => {
    dials.reset();
    await docker.ping();
    assert.match((await docker.version()).ApiVersion, /^1\.\d+$/);
    assert.ok((await docker.info()).CgroupDriver);
    const name = `short-calls-${run}`;
    const id = await docker.createContainer({ name, Image: TEST_BUSYBOX_IMAGE, Cmd: ['sleep', '3600'], Labels: testLabels(run) });
    assert.match(id, /^[0-9a-f]{64}$/);
    await assert.rejects(docker.createContainer({ name, Image: TEST_BUSYBOX_IMAGE, Labels: testLabels(run) }), DockerConflictError, 'the name is taken');
    await docker.startContainer(id);
    await assert.rejects(docker.startContainer(id), DockerNotModifiedError, 'started already: 304');
    const inspected = await docker.inspectContainer(id);
    assert.equal(inspected.Name, `/${name}`);
    assert.equal(inspected.State.Running, true);
    const listed = await docker.listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${run}`] } });
    assert.deepEqual(listed.map((c) => c.Id), [id]);
    await docker.updateContainer(id, { CpuShares: 512 });
    assert.equal((await docker.inspectContainer(id)).HostConfig.CpuShares, 512);
    const exec = await docker.createExec(id, { Cmd: ['true'], AttachStdout: true, AttachStderr: true, Tty: false });
    assert.equal((await docker.inspectExec(exec)).Running, false);
    await docker.killContainer(id, 'SIGKILL');
    await assert.rejects(docker.killContainer(id, 'SIGKILL'), DockerConflictError, 'not running: 409');
    await docker.stopContainer(id, 1); // stopped already: Docker's 304, taken as done
    const image = await docker.inspectImage(TEST_BUSYBOX_IMAGE);
    assert.ok((await docker.listImages({})).some((i) => i.Id === image.Id));
    await docker.removeContainer(id, { force: true, removeVolumes: true });
    await assert.rejects(docker.inspectContainer(id), (err: unknown) => err instanceof DockerNotFoundError && err.message === `No such container: ${id}`);
    await assert.rejects(docker.removeImage(`sha256:${'0'.repeat(64)}`, { force: false, noprune: false }), DockerNotFoundError);
    assert.equal(dials.count, 0, 'docker-modem dialled none of them');
  });
});
