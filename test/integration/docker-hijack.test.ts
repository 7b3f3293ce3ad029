// Exec and attach on the client's own connection (src/docker/hijack.ts), against the real
// Docker: 64 MiB of a command's output read lent from a few reused buffers (docker-modem's
// hijack gave a net.Socket whose every read was a new buffer), and Docker's error answers
// classified as before.
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { parseEndpoint } from '../../src/config/endpoint';
import { EngineApiClient } from '../../src/docker/engine-api-client';
import { HijackedConnection, LENT_READ_BUFFERS } from '../../src/docker/hijack';
import { FrameSplitter } from '../../src/docker/stream-frames';
import { DockerNotFoundError } from '../../src/errors';
import { newTestRun, removeTestContainers, testLabels } from '../support/cleanup';
import { dockerApi, TEST_BUSYBOX_IMAGE } from '../support/images';

const MiB = 1024 * 1024;

describe('exec and attach on a connection of our own, against Docker', () => {
  const run = newTestRun();
  let container: string;
  const docker = new EngineApiClient(parseEndpoint('unix:///var/run/docker.sock'), 60_000);

  before(async () => {
    const made = await dockerApi().createContainer({ Image: TEST_BUSYBOX_IMAGE, Cmd: ['sleep', '3600'], Labels: testLabels(run) });
    await made.start();
    container = made.id;
  });
  after(async () => {
    docker.close();
    await removeTestContainers({ run });
  });

  it('reads 64 MiB of exec output lent from at most LENT_READ_BUFFERS + 2 buffers', async () => {
    const exec = await docker.createExec(container, { Cmd: ['dd', 'if=/dev/zero', 'bs=1M', 'count=64'], AttachStdout: true, AttachStderr: true, Tty: false });
    const connection = await docker.startExec(exec, { tty: false, stdin: false });
    assert.ok(connection instanceof HijackedConnection, 'startExec answers our own connection');
    const frames = new FrameSplitter();
    const buffers = new Set<ArrayBufferLike>();
    let stdout = 0;
    let reads = 0;
    connection.lendReads((data, giveBack) => {
      reads++;
      buffers.add(data.buffer);
      frames.push(data, (stream, piece) => {
        if (stream === 'stdout') stdout += piece.length;
      });
      setImmediate(() => giveBack(true));
    });
    await new Promise((resolve) => connection.once('end', resolve));
    connection.destroy();
    console.log(`64 MiB of exec output: ${reads} reads from ${buffers.size} buffers`);
    assert.equal(stdout, 64 * MiB);
    // (+2: the buffer Node holds ready for the next read, and the copy of the bytes that came with the answer's head.)
    assert.ok(buffers.size <= LENT_READ_BUFFERS + 2, `${buffers.size} buffers for ${reads} reads`);
  });

  it('classifies Docker\'s error answers as before: an unknown exec, an unknown container', async () => {
    await assert.rejects(docker.startExec('0'.repeat(64), { tty: false, stdin: false }), (err: unknown) => err instanceof DockerNotFoundError && /No such exec instance/i.test(err.message));
    await assert.rejects(
      docker.attachContainer('no-such-container-' + run.slice(0, 8), { stdin: false, stdout: true, stderr: true }),
      (err: unknown) => err instanceof DockerNotFoundError && /No such container/i.test(err.message),
    );
  });
});
