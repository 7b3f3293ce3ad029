// main.js's early ask of Docker (src/docker/early-answers.ts): which endpoint it guesses from
// the command line, when it does not ask, and its answers from the real engine.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { askDockerEarly, likelyDockerEndpoint } from '../../../src/docker/early-answers';
import { dockerApi } from '../../support/images';
import { tempDir } from '../../support/temp';

describe('Docker asked before the shim loads', () => {
  const work = tempDir('early-answers');
  after(() => fs.rmSync(work, { recursive: true, force: true }));

  it('guesses the endpoint as the flags would name it: the flag in either form, then DOCKER_HOST, then the default', () => {
    assert.equal(likelyDockerEndpoint(['--docker-endpoint=unix:///a.sock'], { DOCKER_HOST: 'unix:///b.sock' }), 'unix:///a.sock');
    assert.equal(likelyDockerEndpoint(['--log-level=info', '--docker-endpoint', '/c.sock'], {}), '/c.sock');
    assert.equal(likelyDockerEndpoint(['--config=/etc/x.yaml'], { DOCKER_HOST: 'unix:///b.sock' }), 'unix:///b.sock');
    assert.equal(likelyDockerEndpoint([], { DOCKER_HOST: '' }), 'unix:///var/run/docker.sock');
  });

  it('does not ask for --help and --version, nor of a tcp or unparsable endpoint', () => {
    for (const argv of [['--help'], ['-h'], ['--version'], ['--docker-endpoint=tcp://127.0.0.1:2375'], ['--docker-endpoint=ftp://x']]) {
      assert.equal(askDockerEarly(argv, {}), undefined, argv.join(' '));
    }
  });

  it('gives the engine\'s own version and info documents', async () => {
    const early = askDockerEarly([], { DOCKER_HOST: '' });
    assert.ok(early);
    assert.equal(early.socketPath, '/var/run/docker.sock');
    const [version, info] = await Promise.all([early.version, early.info]);
    const docker = dockerApi();
    const [realVersion, realInfo] = await Promise.all([docker.version(), docker.info() as Promise<{ ID: string }>]);
    const [v, i] = [version.document as { ApiVersion: string; Version: string }, info.document as { ID: string }];
    assert.deepEqual([v.Version, v.ApiVersion, i.ID], [realVersion.Version, realVersion.ApiVersion, realInfo.ID]);
    assert.ok(version.seconds > 0 && info.seconds > 0, 'each says how long it took');
  });

  it('fails, for start-up to ask again, when nothing listens or the answer is no 200 with JSON', async () => {
    const absent = askDockerEarly([`--docker-endpoint=unix://${path.join(work, 'absent.sock')}`], {})!;
    await assert.rejects(absent.version, /ENOENT/);
    await assert.rejects(absent.info, /ENOENT/);
    const socket = path.join(work, 'broken.sock');
    const broken = http.createServer((req, res) => {
      if (req.url === '/version') res.writeHead(500).end('{"message":"boom"}');
      else res.writeHead(200).end('not json');
    });
    await new Promise<void>((resolve) => broken.listen(socket, resolve));
    try {
      const early = askDockerEarly([`--docker-endpoint=${socket}`], {})!;
      await assert.rejects(early.version, /GET \/version: Docker answered 500/);
      await assert.rejects(early.info, SyntaxError);
    } finally {
      await new Promise<void>((resolve) => broken.close(() => resolve()));
    }
  });
});
