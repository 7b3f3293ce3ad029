// Two ways the shim is started outside a shell: with its settings in a --config YAML file, and
// by systemd with the CRI socket already open (fd://). systemd-socket-activate (Debian's
// systemd package) does what a .socket unit does, with no running systemd.
import { strict as assert } from 'node:assert';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { criClient } from '../support/client';
import { useShim } from '../support/fixture';
import { TEST_PAUSE_IMAGE } from '../support/images';
import { waitFor } from '../support/poll';
import { MAIN_JS, runShimToExit, tempDir } from '../support/shim';

describe('--config FILE', () => {
  const f = useShim({ shim: false });
  const work = tempDir('config');
  after(() => fs.rmSync(work, { recursive: true, force: true }));

  it('runs with the settings of the file, flags winning over it', async () => {
    const file = path.join(work, 'shim.yaml');
    fs.writeFileSync(file, ['runtime-request-timeout: 45s', 'image-pull-progress-deadline: 3m', 'log-level: error', ''].join('\n'));
    const { shim } = await f.startShim({ args: [`--config=${file}`, '--image-pull-progress-deadline=20s'] });
    const status = await shim.client.runtime.Status({ verbose: true });
    const config = JSON.parse(status.info.config!) as Record<string, unknown>;
    assert.equal(config.runtimeRequestTimeoutMs, 45_000, 'from the file');
    assert.equal(config.imagePullProgressDeadlineMs, 20_000, 'the flag wins');
    // The test harness passes --log-level=debug on the command line, which wins over the file.
    assert.match(shim.output(), /"level":20/);
  });

  it('exits 2, naming the key, on an unknown key or a bad value', async () => {
    const unknown = path.join(work, 'unknown.yaml');
    fs.writeFileSync(unknown, 'network-plugins: cni\n');
    const res = await runShimToExit([`--config=${unknown}`]);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /unknown key "network-plugins"/);
    const badValue = path.join(work, 'bad.yaml');
    fs.writeFileSync(badValue, 'runtime-request-timeout: forever\n');
    const bad = await runShimToExit([`--config=${badValue}`]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /runtime-request-timeout \(in .*bad\.yaml\): "forever" is not a duration/);
    const missing = await runShimToExit([`--config=${path.join(work, 'absent.yaml')}`]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--config: cannot read .*absent\.yaml.*ENOENT/);
  });
});

describe('socket activation (fd://)', () => {
  useShim({ shim: false });
  const work = tempDir('activation');
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    fs.rmSync(work, { recursive: true, force: true });
  });

  /** Starts the shim as a .socket unit would: the socket is made first, the shim on first connection. */
  function activated(socket: string, rootDir: string): { child: ChildProcess; exited: Promise<number | null>; output: () => string } {
    const child = spawn(
      'systemd-socket-activate',
      ['--listen', socket, MAIN_JS, '--container-runtime-endpoint=fd://', `--cri-dockerd-root-directory=${rootDir}`, `--pod-infra-container-image=${TEST_PAUSE_IMAGE}`, '--network-plugin=', '--log-format=json'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    children.push(child);
    let output = '';
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return { child, exited, output: () => output };
  }

  it('serves on the socket it is given, leaves the socket in place when it stops, and a new shim serves the same socket', async () => {
    const socket = path.join(work, 'cri.sock');
    const rootDir = path.join(work, 'root');
    const first = activated(socket, rootDir);
    await waitFor('the activator to make the socket', () => fs.existsSync(socket));
    const client = criClient(`unix://${socket}`);
    try {
      // The first call is what starts the shim; it waits on the socket meanwhile.
      assert.equal((await client.runtime.Version({}, { deadline: Date.now() + 30_000 })).runtimeName, 'docker');
      assert.match(first.output(), /"endpoint":"fd:\/\/"/);
      first.child.kill('SIGTERM');
      assert.equal(await first.exited, 0);
      assert.ok(fs.statSync(socket).isSocket(), 'the socket belongs to systemd and stays');
    } finally {
      client.close();
    }
    // The activator is gone with the shim (it exec'd it); a new one on the same path, as a
    // restarted .socket unit: calls reach the new shim, and its state is the old one's.
    fs.rmSync(socket, { force: true });
    const second = activated(socket, rootDir);
    await waitFor('the activator to make the socket again', () => fs.existsSync(socket));
    const again = criClient(`unix://${socket}`);
    try {
      const status = await again.runtime.Status({}, { deadline: Date.now() + 30_000 });
      assert.equal(status.status?.conditions.find((c) => c.type === 'RuntimeReady')?.status, true);
    } finally {
      again.close();
      second.child.kill('SIGTERM');
      assert.equal(await second.exited, 0);
    }
  });

  it('exits 1 with the reason when started with fd:// but no socket', async () => {
    const res = await runShimToExit(['--container-runtime-endpoint=fd://', `--cri-dockerd-root-directory=${path.join(work, 'lonely')}`]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /fd:\/\/ needs a socket from systemd/);
  });
});

describe('the systemd units in packaging/systemd', () => {
  useShim({ shim: false });
  const units = path.resolve(__dirname, '../../../packaging/systemd');
  const work = tempDir('units');
  after(() => fs.rmSync(work, { recursive: true, force: true }));

  const read = (file: string): string => fs.readFileSync(path.join(units, file), 'utf8');
  const setting = (text: string, key: string): string => {
    const line = text.split('\n').find((l) => l.startsWith(`${key}=`));
    assert.ok(line, `${key}= is set`);
    return line.slice(key.length + 1);
  };

  it('pass systemd-analyze verify without a warning', () => {
    // verify wants ExecStart to exist: point it at the built command.
    const service = read('cri-docker-shim.service').replace('/usr/bin/cri-docker-shim', MAIN_JS);
    fs.writeFileSync(path.join(work, 'cri-docker-shim.service'), service);
    fs.writeFileSync(path.join(work, 'cri-docker-shim.socket'), read('cri-docker-shim.socket'));
    const res = spawnSync('systemd-analyze', ['verify', path.join(work, 'cri-docker-shim.socket'), path.join(work, 'cri-docker-shim.service')], { encoding: 'utf8' });
    assert.equal(res.status, 0, res.stderr);
    assert.equal(res.stderr.trim(), '');
  });

  it('hold the socket closed to others and start the shim with fd:// and the example config', async () => {
    const socketUnit = read('cri-docker-shim.socket');
    assert.equal(setting(socketUnit, 'ListenStream'), '/run/cri-docker-shim.sock');
    assert.equal(setting(socketUnit, 'SocketMode'), '0660');
    const exec = setting(read('cri-docker-shim.service'), 'ExecStart').split(/\s+/);
    assert.equal(exec[0], '/usr/bin/cri-docker-shim');
    // The same arguments, the example config in place of /etc's, on a socket of the test's own.
    const args = exec.slice(1).map((a) => (a === '/etc/cri-docker-shim/config.yaml' ? path.join(units, 'config.yaml') : a));
    assert.deepEqual(args.slice(0, 2), ['--container-runtime-endpoint', 'fd://']);
    const socket = path.join(work, 'cri.sock');
    const child = spawn(
      'systemd-socket-activate',
      ['--listen', socket, '--fdname=cri', MAIN_JS, ...args, `--cri-dockerd-root-directory=${path.join(work, 'root')}`, `--pod-infra-container-image=${TEST_PAUSE_IMAGE}`, '--network-plugin=', '--log-format=json'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let output = '';
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const client = criClient(`unix://${socket}`);
    try {
      await waitFor('the activator to make the socket', () => fs.existsSync(socket));
      const status = await client.runtime.Status({ verbose: true }, { deadline: Date.now() + 30_000 });
      const config = JSON.parse(status.info.config!) as Record<string, unknown>;
      assert.equal(config.containerRuntimeEndpoint, 'fd://');
      assert.equal(config.dockerEndpoint, 'unix:///var/run/docker.sock', 'from the example config');
    } finally {
      client.close();
      child.kill('SIGTERM');
      assert.equal(await exited, 0, output);
    }
  });
});
