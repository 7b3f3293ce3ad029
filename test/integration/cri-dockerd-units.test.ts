// An operator swaps cri-dockerd's binary for ours and keeps the unit: the ExecStart= lines of
// cri-dockerd's own cri-docker.service and of common install guides must start the shim, under
// the unit's Type=notify (READY=1 on NOTIFY_SOCKET) and its ExecReload (SIGHUP). The socket is
// passed as a .socket unit passes it (systemd-socket-activate); only the root directory is the
// test's own, appended after the line's flags.
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { criClient } from '../support/client';
import { useShim } from '../support/fixture';
import { waitFor } from '../support/poll';
import { MAIN_JS, runShimToExit, tempDir } from '../support/shim';

/** ExecStart= lines as they stand in cri-dockerd's unit and in install guides, program first. */
const EXEC_START_LINES: Record<string, string> = {
  // Mirantis/cri-dockerd packaging/systemd/cri-docker.service (0.3 and 0.4)
  'cri-dockerd 0.3/0.4 unit': '/usr/bin/cri-dockerd --container-runtime-endpoint fd://',
  // minikube's drop-in for its nodes
  'minikube drop-in': '/usr/bin/cri-dockerd --container-runtime-endpoint fd:// --pod-infra-container-image=registry.k8s.io/pause:3.10 --network-plugin=cni --hairpin-mode=hairpin-veth',
  // guides that set up Docker's own bridge, with every path spelled out
  'guide with paths and docker bridge':
    '/usr/local/bin/cri-dockerd --container-runtime-endpoint fd:// --network-plugin= --cni-bin-dir=/opt/cni/bin --cni-cache-dir=/var/lib/cni/cache --cni-conf-dir=/etc/cni/net.d --docker-endpoint=unix:///var/run/docker.sock --log-level=info --image-pull-progress-deadline=5m --runtime-request-timeout=10m --streaming-bind-addr=127.0.0.1 --ipv6-dual-stack=false --buildinfo=false',
};

describe('cri-dockerd ExecStart= lines start the shim', () => {
  useShim({ shim: false });
  const work = tempDir('cri-dockerd-units');
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    fs.rmSync(work, { recursive: true, force: true });
  });

  /** A unix datagram socket standing in for systemd's NOTIFY_SOCKET; Node has none, python3 has. */
  function notifyListener(socket: string): { messages: () => string; child: ChildProcess } {
    const child = spawn(
      'python3',
      ['-u', '-c', 'import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\ns.bind(sys.argv[1])\nprint("bound")\nwhile True: print(s.recv(4096).decode().replace("\\n"," "))', socket],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    return { messages: () => out, child };
  }

  for (const [name, line] of Object.entries(EXEC_START_LINES)) {
    it(`${name}: serves, tells systemd it is ready, and lives through ExecReload's SIGHUP`, async () => {
      const dir = fs.mkdtempSync(path.join(work, 'unit-'));
      const notify = notifyListener(path.join(dir, 'notify.sock'));
      await waitFor('the notify socket', () => notify.messages().includes('bound'));
      const socket = path.join(dir, 'cri.sock');
      const args = line.split(/\s+/).slice(1);
      // The activator hands on only the variables it is told to (-E), as systemd sets NOTIFY_SOCKET for the unit.
      const activator = ['--listen', socket, '-E', `NOTIFY_SOCKET=${path.join(dir, 'notify.sock')}`];
      const child = spawn('systemd-socket-activate', [...activator, MAIN_JS, ...args, `--cri-dockerd-root-directory=${path.join(dir, 'root')}`, '--log-format=json'], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      children.push(child);
      let output = '';
      child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      await waitFor('the activator to make the socket', () => fs.existsSync(socket));
      const client = criClient(`unix://${socket}`);
      try {
        assert.equal((await client.runtime.Version({}, { deadline: Date.now() + 30_000 })).runtimeName, 'docker', output);
        await waitFor('READY=1 on the notify socket', () => notify.messages().includes('READY=1'));
        assert.match(notify.messages(), new RegExp(`MAINPID=${child.pid}`), 'sent on behalf of the shim itself');
        assert.doesNotMatch(output, /unknown option|not one of|is not/i, 'no flag of the line is refused');
        child.kill('SIGHUP');
        await waitFor('the SIGHUP to be logged', () => output.includes('nothing to reload'));
        assert.equal((await client.runtime.Version({})).runtimeName, 'docker', 'still serving after SIGHUP');
      } finally {
        client.close();
        child.kill('SIGTERM');
        notify.child.kill();
      }
      assert.equal(await exited, 0, output);
    });
  }

  it('--buildinfo prints the program and its version, as cri-dockerd does', async () => {
    const res = await runShimToExit(['--buildinfo']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^Program: cri-docker-shim\nVersion: \d+\.\d+\.\d+\nNode\.js version: v\d+/);
  });

  it('--pod-cidr is the node’s pod CIDR until kubelet sends one', async () => {
    const dir = fs.mkdtempSync(path.join(work, 'cidr-'));
    const socket = path.join(dir, 'cri.sock');
    const child = spawn(MAIN_JS, [`--container-runtime-endpoint=unix://${socket}`, `--cri-dockerd-root-directory=${path.join(dir, 'root')}`, '--network-plugin=', '--pod-cidr=10.99.0.0/24', '--log-format=json'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await waitFor('the shim to make its socket', () => fs.existsSync(socket));
    const client = criClient(`unix://${socket}`);
    try {
      const podCidr = async () => (JSON.parse((await client.runtime.Status({ verbose: true }, { deadline: Date.now() + 30_000 })).info.network!) as { podCidr: string }).podCidr;
      assert.equal(await podCidr(), '10.99.0.0/24');
      await client.runtime.UpdateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: '10.98.0.0/24' } } });
      assert.equal(await podCidr(), '10.98.0.0/24', "kubelet's wins");
    } finally {
      client.close();
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0);
  });
});
