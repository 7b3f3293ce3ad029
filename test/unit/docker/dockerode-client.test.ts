// How the Docker client classifies the daemon's error answers (src/docker/dockerode-client.ts),
// against a stand-in daemon on a unix socket that gives canned answers.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DockerodeClient } from '../../../src/docker/dockerode-client';
import { DockerConflictError, DockerNotFoundError, DockerServerError } from '../../../src/errors';
import { tempDir } from '../../support/temp';

const ID = `sha256:${'ab'.repeat(32)}`;

describe('Docker error answers', () => {
  const work = tempDir('docker-errors');
  const socket = path.join(work, 'docker.sock');
  /** The answer the stand-in gives next: status and daemon message. */
  let answer: [number, string] = [200, ''];
  const server = http.createServer((_req, res) => {
    res.writeHead(answer[0], { 'Content-Type': 'application/json' }).end(JSON.stringify({ message: answer[1] }));
  });
  const docker = new DockerodeClient({ kind: 'unix', path: socket, url: `unix://${socket}` }, 5_000);

  before(() => new Promise<void>((resolve) => server.listen(socket, resolve)));
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    fs.rmSync(work, { recursive: true, force: true });
  });

  async function removeFails(status: number, message: string): Promise<unknown> {
    answer = [status, message];
    return docker.removeImage(ID, { force: true, noprune: false }).then(
      () => assert.fail('the removal should have failed'),
      (err: unknown) => err,
    );
  }

  it('takes "gone" in Docker 20.10\'s 500 words and in 404s as not found', async () => {
    for (const [status, message] of [
      [500, `unrecognized image ID ${ID}`],
      [404, `unrecognized image ID ${ID}`],
      [404, `No such image: ${ID}`],
      [404, 'reference does not exist'],
    ] as const) {
      const err = await removeFails(status, message);
      assert.ok(err instanceof DockerNotFoundError, `${status} ${message}: ${String(err)}`);
      assert.equal(err.message, message);
    }
  });

  it('keeps other failures as they are', async () => {
    const server500 = await removeFails(500, 'driver failed to remove root filesystem');
    assert.ok(server500 instanceof DockerServerError && server500.httpStatus === 500, String(server500));
    assert.ok((await removeFails(409, 'conflict: unable to delete')) instanceof DockerConflictError);
  });
});
