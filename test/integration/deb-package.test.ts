// The Debian package (scripts/package.mjs deb): what dpkg-deb says it holds and depends on, its
// units under systemd-analyze verify (with the cri-dockerd socket drop-in it ships as an
// example), and an install into a clean Debian container (the compose images' debootstrap
// base, which has no Node) where the installed /usr/bin/cri-docker-shim, started as its unit
// starts it, serves the CRI over the host's Docker: Version, Status, a pod run and removed, and
// a port forward into it through the port relay, the static program the executable carries and
// writes out into its root directory.
import { strict as assert } from 'node:assert';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { criClient, type CriClient } from '../support/client';
import { testLabels } from '../support/cleanup';
import { REPO_ROOT } from '../support/compose';
import { useShim } from '../support/fixture';
import { dockerApi, TEST_PAUSE_IMAGE } from '../support/images';
import { busybox, removeTestPod, runContainer, startTestPod } from '../support/pods';
import { waitFor } from '../support/poll';
import { httpGetThroughPortForward } from '../support/streaming-clients';

const run = promisify(execFile);
/** The compose images' base (scripts/build-base-image.sh): Debian trixie minbase, no Node. */
const BASE_IMAGE = 'cri-docker-shim/debian:trixie';
const PACKAGE = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string; optionalDependencies: Record<string, string> };
const VERSION = PACKAGE.version;
/** The project's Node for this CPU (scripts/project-node.mjs), which the executable is a copy of. */
const PINNED_NODE = PACKAGE.optionalDependencies[`node-linux-${process.arch}`]!;
const DOCKER_SOCKET = process.env.TEST_DOCKER_SOCKET ?? '/var/run/docker.sock';

const unavailable = ['dpkg-deb', 'strip', 'dpkg-shlibdeps'].find((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);

describe('the Debian package', { skip: unavailable && `${unavailable} is not installed (scripts/setup.sh installs it)` }, () => {
  const f = useShim({ shim: false });
  let deb: string;
  /** The package unpacked with dpkg-deb -x. */
  let tree: string;

  before(async () => {
    // Uncompressed: xz takes most of a minute, for a package thrown away after the test.
    const out = f.tempDir('deb-out');
    const built = await run(process.execPath, [path.join(REPO_ROOT, 'scripts/package.mjs'), 'deb', '--deb-compression=none', `--out=${out}`], { cwd: REPO_ROOT, maxBuffer: 16 << 20 });
    const debs = fs.readdirSync(out).filter((name) => name.endsWith('.deb'));
    assert.equal(debs.length, 1, built.stdout);
    deb = path.join(out, debs[0]!);
    tree = f.tempDir('deb-tree');
    execFileSync('dpkg-deb', ['-x', deb, tree]);
  });

  it('holds the executable, the units and the config as a conffile, and depends on Docker and iptables', () => {
    assert.equal(path.basename(deb), `cri-docker-shim_${VERSION}_${execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim()}.deb`);
    const depends = execFileSync('dpkg-deb', ['-f', deb, 'Depends'], { encoding: 'utf8' }).trim().split(/,\s*/);
    assert.ok(depends.includes('docker.io | docker-ce | docker-engine'), depends.join(', '));
    assert.ok(depends.includes('iptables'), depends.join(', '));
    assert.ok(depends.some((d) => d.startsWith('libc6 (>= ')), 'the shared libraries of the executable, from dpkg-shlibdeps');
    const conffiles = execFileSync('dpkg-deb', ['--ctrl-tarfile', deb]);
    assert.match(execFileSync('tar', ['-xOf', '-', './conffiles'], { input: conffiles, encoding: 'utf8' }), /^\/etc\/cri-docker-shim\/config\.yaml\n$/);
    const files = execFileSync('dpkg-deb', ['-c', deb], { encoding: 'utf8' });
    for (const file of ['usr/bin/cri-docker-shim', 'usr/lib/systemd/system/cri-docker-shim.service', 'usr/lib/systemd/system/cri-docker-shim.socket', 'etc/cri-docker-shim/config.yaml', 'usr/share/doc/cri-docker-shim/examples/cri-dockerd-socket.conf']) {
      assert.match(files, new RegExp(` root/root .* \\./${file.replace(/\./g, '\\.')}\\n`), `${file}, owned by root`);
    }
    // Installed, not active: nothing under /etc/systemd, the drop-in only as an example.
    assert.doesNotMatch(files, /\.\/etc\/systemd\//);
    assert.equal(fs.statSync(path.join(tree, 'usr/bin/cri-docker-shim')).mode & 0o777, 0o755);
  });

  it('has units that pass systemd-analyze verify without a warning, with and without the cri-dockerd drop-in', () => {
    const units = path.join(tree, 'usr/lib/systemd/system');
    const service = fs.readFileSync(path.join(units, 'cri-docker-shim.service'), 'utf8');
    assert.match(service, /^ExecStart=\/usr\/bin\/cri-docker-shim /m);
    assert.match(service, /^RestartPreventExitStatus=2$/m);
    assert.match(service, /^Documentation=file:\/usr\/share\/doc\/cri-docker-shim\/systemd\.md/m);
    const dir = f.tempDir('deb-units');
    // verify wants ExecStart to exist: the packaged executable, where dpkg-deb -x put it.
    fs.writeFileSync(path.join(dir, 'cri-docker-shim.service'), service.replace('/usr/bin/cri-docker-shim', path.join(tree, 'usr/bin/cri-docker-shim')));
    fs.copyFileSync(path.join(units, 'cri-docker-shim.socket'), path.join(dir, 'cri-docker-shim.socket'));
    const verify = (): void => {
      const res = spawnSync('systemd-analyze', ['verify', path.join(dir, 'cri-docker-shim.socket'), path.join(dir, 'cri-docker-shim.service')], { encoding: 'utf8' });
      assert.equal(res.status, 0, res.stderr);
      assert.equal(res.stderr.trim(), '');
    };
    verify();
    // The drop-in as docs/systemd.md installs it; systemd-analyze reads <unit>.d/ beside the unit.
    const dropIn = fs.readFileSync(path.join(tree, 'usr/share/doc/cri-docker-shim/examples/cri-dockerd-socket.conf'), 'utf8');
    const settings = dropIn.split('\n').filter((l) => /^\w+=/.test(l));
    assert.deepEqual(settings, ['ListenStream=', 'ListenStream=%t/cri-dockerd.sock', 'SocketMode=0660', 'SocketUser=root', 'SocketGroup=docker'], "cri-dockerd's socket");
    fs.mkdirSync(path.join(dir, 'cri-docker-shim.socket.d'));
    fs.writeFileSync(path.join(dir, 'cri-docker-shim.socket.d', 'cri-dockerd.conf'), dropIn);
    verify();
  });

  describe('installed into a clean Debian container', () => {
    let container: string;
    /** Mounted at the same path inside: every path the shim hands Docker means the same file on the host. */
    let work: string;
    let client: CriClient;
    const exec = async (script: string): Promise<{ code: number; out: string }> => {
      try {
        const { stdout, stderr } = await run('docker', ['exec', container, 'sh', '-c', script], { maxBuffer: 16 << 20 });
        return { code: 0, out: stdout + stderr };
      } catch (err) {
        const e = err as { code?: number; stdout?: string; stderr?: string };
        return { code: e.code ?? -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
      }
    };

    before(async () => {
      if (!(await dockerApi().getImage(BASE_IMAGE).inspect().then(() => true, () => false))) {
        // The same base the compose tests build (idempotent, serialised with them).
        await run(path.join(REPO_ROOT, 'scripts/build-base-image.sh'), [], { cwd: REPO_ROOT, maxBuffer: 16 << 20 });
      }
      work = f.tempDir('deb-install');
      const dockerRoot = (await run('docker', ['info', '-f', '{{.DockerRootDir}}'])).stdout.trim();
      const labels = Object.entries(testLabels(f.run)).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
      // As the compose file's shim service runs beside the host's Docker: privileged (port
      // forward enters pod namespaces), its PID and network namespaces, Docker's socket, Docker's
      // root read-only at its own path.
      const started = await run('docker', [
        'run', '-d', ...labels, '--privileged', '--pid=host', '--network=host',
        '-v', `${DOCKER_SOCKET}:/var/run/docker.sock`, '-v', `${dockerRoot}:${dockerRoot}:ro`, '-v', `${work}:${work}`, '-v', `${deb}:${deb}:ro`,
        BASE_IMAGE, 'sleep', 'infinity',
      ]);
      container = started.stdout.trim();
      f.onCleanUp(() => run('docker', ['rm', '-f', container]));
    });

    it('installs with dpkg, enabling and starting nothing, and runs without Node', async () => {
      assert.notEqual((await exec('command -v node')).code, 0, 'the container has no Node');
      // Docker and iptables are not installable here (no network for apt in the container); the
      // shim reaches the host's Docker through its socket and needs neither for this pod.
      const installed = await exec(`dpkg --force-depends -i ${deb}`);
      assert.equal(installed.code, 0, installed.out);
      assert.match(installed.out, /depends on docker\.io \| docker-ce \| docker-engine; however/);
      assert.match(installed.out, /installed, not enabled/);
      assert.equal((await exec('dpkg-query -W -f=\'${Status} ${Version}\' cri-docker-shim')).out, `install ok installed ${VERSION}`);
      assert.match((await exec("dpkg-query -W -f='${Conffiles}' cri-docker-shim")).out, /^ \/etc\/cri-docker-shim\/config\.yaml [0-9a-f]{32}$/);
      assert.equal((await exec('find /etc/systemd -name "cri-docker-shim*"')).out, '', 'no unit enabled');
      const version = await exec('/usr/bin/cri-docker-shim --version');
      assert.equal(version.code, 0, version.out);
      assert.match(version.out, new RegExp(`^cri-docker-shim ${VERSION.replace(/\./g, '\\.')} \\(node v${PINNED_NODE.replace(/\./g, '\\.')}\\)\n$`), 'the project\'s Node, which it carries');
    });

    it('serves the CRI over the host\'s Docker as its unit starts it, runs a pod and forwards a port into it', async () => {
      // The unit's own command line, on a socket in the shared directory instead of systemd's.
      const execStart = (await exec("sed -n 's/^ExecStart=//p' /usr/lib/systemd/system/cri-docker-shim.service")).out.trim().split(/\s+/);
      assert.equal(execStart[0], '/usr/bin/cri-docker-shim');
      const socket = path.join(work, 'cri.sock');
      const args = execStart.map((a) => (a === 'fd://' ? `unix://${socket}` : a));
      const testArgs = [`--cri-dockerd-root-directory=${work}/root`, `--pod-infra-container-image=${TEST_PAUSE_IMAGE}`, '--network-plugin='];
      await run('docker', ['exec', '-d', container, 'sh', '-c', `exec ${[...args, ...testArgs].join(' ')} >${work}/shim.log 2>&1`]);
      const log = (): string => fs.readFileSync(path.join(work, 'shim.log'), 'utf8');
      client = criClient(`unix://${socket}`);
      f.onCleanUp(() => client.close());
      const version = await waitFor('the installed shim to answer Version', () => client.runtime.Version({}), { timeoutMs: 30_000, intervalMs: 100, explain: log });
      assert.equal(version.runtimeName, 'docker');
      assert.equal(version.runtimeVersion, (await run('docker', ['version', '-f', '{{.Server.Version}}'])).stdout.trim());
      const status = await client.runtime.Status({ verbose: true });
      assert.equal(status.status?.conditions.find((c) => c.type === 'RuntimeReady')?.status, true);
      const config = JSON.parse(status.info.config!) as Record<string, unknown>;
      assert.equal(config.dockerEndpoint, 'unix:///var/run/docker.sock', 'from the installed config.yaml');

      // On Docker's bridge, in a network namespace of its own: the port forward enters it through
      // the relay the executable carries (no nsenter, no Node).
      const pod = await startTestPod(client, f.run, 'deb');
      const port = 8080;
      try {
        const { status: podStatus } = await client.runtime.PodSandboxStatus({ podSandboxId: pod.id });
        assert.equal(podStatus?.state, 'SANDBOX_READY');
        const inspected = await dockerApi().getContainer(pod.id).inspect();
        assert.equal(inspected.State.Running, true, 'the pause container runs on the host\'s Docker');
        await runContainer(client, pod, busybox(f.run, 'web', { command: ['sh', '-c', `mkdir -p /www && echo hello-from-deb > /www/index.html && exec httpd -f -p 127.0.0.1:${port} -h /www`] }));
        // httpd in the pod may take a moment to listen.
        const got = await waitFor('the pod port to answer through port forward', async () => {
          const r = await httpGetThroughPortForward(client, pod.id, port);
          return r.body.includes('hello-from-deb') ? r : undefined;
        }, { timeoutMs: 20_000, explain: log });
        assert.match(got.body, /^HTTP\/1\.[01] 200/);
        assert.equal(got.error, '');
        const relay = fs.statSync(path.join(work, 'root', 'port-relay'));
        assert.equal(relay.mode & 0o777, 0o700, 'the relay written out is root\'s alone');
      } finally {
        await removeTestPod(client, pod);
      }
      assert.deepEqual((await client.runtime.ListPodSandbox({ filter: { labelSelector: testLabels(f.run) } })).items, []);
    });
  });
});
