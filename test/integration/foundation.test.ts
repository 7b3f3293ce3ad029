// The shim as a process: its socket, its start-up checks, its flags, its shutdown, and the
// runtime-level RPCs (Version, Status, RuntimeConfig, UpdateRuntimeConfig) against real Docker.
import { isApiVersionAtLeast } from '../../src/docker/docker-version';
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import { rejectsWith } from '../support/client';
import { useShim } from '../support/fixture';
import { EARLY_USER_AGENT } from '../../src/docker/early-answers';
import { DockerProxy } from '../support/docker-proxy';
import { dockerApi } from '../support/images';
import { waitFor } from '../support/poll';
import { runShimToExit } from '../support/shim';

function condition(res: { status: { conditions: Array<{ type: string; status: boolean; reason: string; message: string }> } | null }, type: string) {
  const found = res.status?.conditions.find((c) => c.type === type);
  assert.ok(found, `condition ${type} missing`);
  return found;
}

describe('a running shim', () => {
  const f = useShim();

  it('answers Version with Docker’s own version and CRI v1', async () => {
    const docker = await dockerApi().version();
    const v = await f.client.runtime.Version({ version: '0.1.0' });
    assert.equal(v.runtimeName, 'docker');
    assert.equal(v.runtimeVersion, docker.Version);
    assert.equal(v.runtimeApiVersion, 'v1');
    assert.equal(v.version, '0.1.0');
  });

  it('reports runtime and network ready, with verbose details', async () => {
    const res = await f.client.runtime.Status({ verbose: true });
    assert.equal(condition(res, 'RuntimeReady').status, true);
    assert.equal(condition(res, 'NetworkReady').status, true);
    const docker = JSON.parse(res.info.docker!) as { Version: string; ApiVersion: string };
    assert.equal(docker.Version, (await dockerApi().version()).Version);
    assert.equal((JSON.parse(res.info.cgroup!) as { driver: string }).driver, (await dockerApi().info()).CgroupDriver);
    assert.equal((JSON.parse(res.info.config!) as { rootDirectory: string }).rootDirectory, f.shim.rootDir);
    const runtimes = Object.keys((await dockerApi().info()).Runtimes ?? {}).sort();
    assert.deepEqual(res.runtimeHandlers.map((h) => h.name), ['', ...runtimes]);
    assert.ok(runtimes.length > 0, 'Docker names at least one runtime');
    for (const h of res.runtimeHandlers) {
      // Recursive read-only mounts from API 1.44 (this kernel has mount_setattr); never a user namespace per pod.
      assert.deepEqual(h.features, { recursiveReadOnlyMounts: isApiVersionAtLeast(docker.ApiVersion, '1.44'), userNamespaces: false }, `features of ${h.name}`);
    }
  });

  it('omits the info map unless verbose', async () => {
    const res = await f.client.runtime.Status({});
    assert.deepEqual(res.info, {});
  });

  it('reports Docker’s cgroup driver in RuntimeConfig', async () => {
    const info = await dockerApi().info();
    const res = await f.client.runtime.RuntimeConfig({});
    assert.equal(res.linux?.cgroupDriver, info.CgroupDriver === 'systemd' ? 'SYSTEMD' : 'CGROUPFS');
  });

  it('passes a pod CIDR to the network plugin, and accepts an empty UpdateRuntimeConfig', async () => {
    await f.client.runtime.UpdateRuntimeConfig({});
    await f.client.runtime.UpdateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: '10.88.0.0/16' } } });
    const res = await f.client.runtime.Status({ verbose: true });
    assert.equal((JSON.parse(res.info.network!) as { podCidr: string }).podCidr, '10.88.0.0/16');
    await assert.rejects(
      f.client.runtime.UpdateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: 'not-a-cidr' } } }),
      rejectsWith(Code.INVALID_ARGUMENT, /pod_cidr/),
    );
  });

  it('answers UNIMPLEMENTED, naming the RPC, for what is not built', async () => {
    await assert.rejects(
      f.client.runtime.CheckpointContainer({ containerId: 'abc', location: '/tmp/x' }),
      rejectsWith(Code.UNIMPLEMENTED, /CheckpointContainer/),
    );
  });

  it('creates its socket with mode 0660', () => {
    const stat = fs.statSync(f.shim.socket);
    assert.ok(stat.isSocket());
    assert.equal(stat.mode & 0o777, 0o660);
  });

  it('logs one debug line per RPC with its duration', async () => {
    await f.client.runtime.Version({});
    await waitFor('an rpc log line', () =>
      f.shim
        .output()
        .split('\n')
        .some((line) => line.includes('"rpc":"runtime.v1.RuntimeService/Version"') && /"durationMs":[\d.]+/.test(line)),
    );
  });

  it('refuses a second server on the same live socket', async () => {
    const res = await runShimToExit([`--container-runtime-endpoint=unix://${f.shim.socket}`, `--cri-dockerd-root-directory=${f.shim.rootDir}`]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /in use by a running server/);
    assert.ok(fs.statSync(f.shim.socket).isSocket(), 'the running server’s socket must stay');
  });
});

describe('socket handling and shutdown', () => {
  const f = useShim({ shim: false });

  it('replaces a stale socket left by a crashed run', async () => {
    const root = f.tempDir('root');
    const { shim: crashed } = await f.startShim({ rootDir: root });
    crashed.child.kill('SIGKILL');
    await waitFor('the crashed shim to exit', () => crashed.child.exitCode !== null || crashed.child.signalCode !== null);
    // Keep its socket file, as a real crash would: start a new shim on the same path.
    const socket = crashed.socket;
    assert.ok(fs.statSync(socket).isSocket(), 'a killed shim leaves its socket behind');
    const { shim: next } = await f.startShim({ rootDir: root, args: [`--container-runtime-endpoint=unix://${socket}`] });
    assert.match(next.output(), /removing stale socket/);
    assert.equal((await next.client.runtime.Version({})).runtimeName, 'docker');
  });

  it('refuses to replace a path that is not a socket', async () => {
    const dir = f.tempDir('notsock');
    const file = path.join(dir, 'cri.sock');
    fs.writeFileSync(file, 'precious');
    const res = await runShimToExit([`--container-runtime-endpoint=unix://${file}`, `--cri-dockerd-root-directory=${dir}/root`]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /is not a socket/);
    assert.equal(fs.readFileSync(file, 'utf8'), 'precious');
  });

  it('leaves no temp dir behind when the shim it starts fails to', async () => {
    const dir = f.tempDir('notsock2');
    const file = path.join(dir, 'cri.sock');
    fs.writeFileSync(file, 'precious');
    // startShim's work dir is made under os.tmpdir(), which reads TMPDIR at each call.
    const tmp = f.tempDir('tmpdir');
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      await assert.rejects(f.startShim({ args: [`--container-runtime-endpoint=unix://${file}`] }), /shim exited during start-up/);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    assert.deepEqual(fs.readdirSync(tmp), []);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`exits 0 on ${signal} and removes its socket`, async () => {
      const { shim } = await f.startShim();
      const socket = shim.socket;
      const code = await shim.stop(signal);
      assert.equal(code, 0);
      assert.equal(fs.existsSync(socket), false);
    });
  }

  it('lets an in-flight call finish before exiting on SIGTERM', async () => {
    const behind = await f.startShimBehindProxy(['--shutdown-grace-period=20s']);
    const { shim, proxy } = behind;
    try {
      proxy.delayMs = 1500;
      const before = proxy.received;
      // A call that waits on Docker (Status no longer does: it answers within a second).
      const inFlight = shim.client.images.RemoveImage({ image: { image: 'cds-test-absent/never:1' } });
      await waitFor('RemoveImage to reach Docker', () => proxy.received > before);
      shim.child.kill('SIGTERM');
      assert.deepEqual(await inFlight, {}, 'answered: an absent image is removed already');
    } finally {
      assert.equal(await behind.stop(), 0);
    }
  });

  it('cuts off calls still running after the grace period, and still exits 0', async () => {
    const { shim, proxy, stop } = await f.startShimBehindProxy(['--shutdown-grace-period=200ms']);
    proxy.delayMs = 60_000;
    const before = proxy.received;
    const inFlight = shim.client.images.RemoveImage({ image: { image: 'cds-test-absent/never:1' } }).then(
      () => 'answered',
      (err: { code: number }) => err.code,
    );
    await waitFor('RemoveImage to reach Docker', () => proxy.received > before);
    assert.equal(await stop('SIGTERM'), 0);
    assert.notEqual(await inFlight, 'answered');
  });
});

describe('Docker hanging (it takes connections and answers nothing)', () => {
  const f = useShim({ behindProxy: true, pod: 'hang' });

  it('Status answers within a second throughout: ready for a few seconds, then not, then ready again; reads answer from the cache', async () => {
    const statusWithin = async (ms: number): Promise<ReturnType<typeof condition>> => {
      const started = Date.now();
      const res = await f.client.runtime.Status({}, { deadline: Date.now() + ms });
      assert.ok(Date.now() - started < ms);
      return condition(res, 'RuntimeReady');
    };
    assert.equal((await statusWithin(1_000)).status, true);
    f.proxy.hang();
    try {
      const down = await waitFor('RuntimeReady false while Docker hangs', async () => {
        const c = await statusWithin(1_000);
        return c.status ? undefined : c;
      }, { timeoutMs: 15_000, intervalMs: 500 });
      assert.equal(down.reason, 'DockerDaemonNotReady');
      assert.match(down.message, /no answer for \d+ s/);
      // The state cache still holds what Docker said last.
      const { items } = await f.client.runtime.ListPodSandbox({ filter: { id: f.pod.id } }, { deadline: Date.now() + 1_000 });
      assert.equal(items.length, 1);
      const pod = await f.client.runtime.PodSandboxStatus({ podSandboxId: f.pod.id }, { deadline: Date.now() + 1_000 });
      assert.equal(pod.status?.state, 'SANDBOX_READY');
    } finally {
      f.proxy.resume();
    }
    await waitFor('RuntimeReady again', async () => (await statusWithin(1_000)).status, { timeoutMs: 15_000, intervalMs: 250 });
  });
});

describe('Docker going away and coming back', () => {
  const f = useShim({ behindProxy: true, args: ['--runtime-request-timeout=2s'] });

  it('turns RuntimeReady false with DockerDaemonNotReady, then true again without a restart', async () => {
    assert.equal(condition(await f.client.runtime.Status({}), 'RuntimeReady').status, true);
    await f.proxy.down();
    const down = condition(await f.client.runtime.Status({}), 'RuntimeReady');
    assert.equal(down.status, false);
    assert.equal(down.reason, 'DockerDaemonNotReady');
    assert.match(down.message, /docker/i);
    await f.proxy.up();
    await waitFor('RuntimeReady to come back', async () => condition(await f.client.runtime.Status({}), 'RuntimeReady').status);
  });
});

describe('start-up checks', () => {
  const f = useShim({ shim: false });

  /** The shim started against a stand-in Docker answering with `answer`, run until it exits; no CRI socket may be left served. */
  async function startAgainst(name: string, answer: http.RequestListener): Promise<{ code: number | null; stderr: string }> {
    const dir = f.tempDir(name);
    const socket = path.join(dir, 'docker.sock');
    const fake = http.createServer(answer);
    await new Promise<void>((resolve) => fake.listen(socket, resolve));
    try {
      const res = await runShimToExit([`--docker-endpoint=unix://${socket}`, `--container-runtime-endpoint=unix://${dir}/cri.sock`, `--cri-dockerd-root-directory=${dir}/root`]);
      assert.equal(fs.existsSync(`${dir}/cri.sock`), false, 'no socket is served by a refused start');
      return res;
    } finally {
      await new Promise<void>((resolve) => fake.close(() => resolve()));
    }
  }

  it('refuses a Docker whose API is older than 1.41, naming both versions', async () => {
    const res = await startAgainst('olddocker', (req, res) => {
      res.setHeader('Content-Type', 'application/json');
      if (req.url?.endsWith('/version')) {
        res.end(JSON.stringify({ Version: '19.03.15', ApiVersion: '1.40', Os: 'linux', Arch: 'amd64' }));
      } else {
        res.end(JSON.stringify({ CgroupDriver: 'cgroupfs', CgroupVersion: '1' }));
      }
    });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /19\.03\.15/);
    assert.match(res.stderr, /API 1\.40/);
    assert.match(res.stderr, /1\.41 or newer/);
  });

  it('exits at once, with Docker\'s words, when Docker refuses the request\'s API version', async () => {
    // What Docker 29.0 answers a request older than its oldest API (1.44).
    const res = await startAgainst('refusing', (_req, res) => {
      res.statusCode = 400;
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ message: 'client version 1.41 is too old. Minimum supported API version is 1.44, please upgrade your client to a newer version' }));
    });
    assert.equal(res.code, 1);
    // Said as a refusal, not as a Docker that did not answer (which start-up waits 10 s for).
    assert.match(res.stderr, /refuses the shim's requests: .*Minimum supported API version is 1\.44/);
  });

  it('refuses a --cgroup-driver that differs from Docker’s, naming both', async () => {
    const info = await dockerApi().info();
    const other = info.CgroupDriver === 'systemd' ? 'cgroupfs' : 'systemd';
    const dir = f.tempDir('cgroup');
    const res = await runShimToExit([
      `--cgroup-driver=${other}`,
      `--container-runtime-endpoint=unix://${dir}/cri.sock`,
      `--cri-dockerd-root-directory=${dir}/root`,
    ]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, new RegExp(`--cgroup-driver=${other} does not match Docker's cgroup driver ${info.CgroupDriver}`));
  });

  it('starts with cni and kubenet, and says in Status what their network still lacks', async () => {
    const emptyConfDir = f.tempDir('no-cni-conf');
    const cases: Array<[string[], RegExp]> = [
      [['--network-plugin=cni', `--cni-conf-dir=${emptyConfDir}`, `--cni-cache-dir=${f.tempDir('cni-cache')}`], /no network config found/],
      [['--network-plugin=kubenet', `--cni-cache-dir=${f.tempDir('kubenet-cache')}`], /kubenet has no pod CIDR yet/],
    ];
    for (const [args, reason] of cases) {
      const { shim, stop } = await f.startShim({ args });
      const res = await shim.client.runtime.Status({});
      const network = res.status!.conditions.find((c) => c.type === 'NetworkReady')!;
      assert.deepEqual([network.status, network.reason], [false, 'NetworkPluginNotReady']);
      assert.match(network.message, reason);
      assert.equal((await stop()) ?? 0, 0);
    }
  });

  it('asks Docker for its version and info once, before the shim has loaded, and answers Version and Status from them', async () => {
    const { shim, proxy } = await f.startShimBehindProxy();
    await shim.client.runtime.Status({});
    await shim.client.runtime.Version({});
    // Each asked once, and that once by main.js's early ask.
    const asked = (what: string): string[] => proxy.requests.flatMap((r, i) => (r === `GET ${what}` ? [proxy.userAgents[i]!] : []));
    assert.deepEqual([asked('/version'), asked('/info')], [[EARLY_USER_AGENT], [EARLY_USER_AGENT]], proxy.requests.slice(0, 8).join(', '));
  });

  it('asks again itself when the early answers came from another endpoint than the --config file names', async () => {
    const dir = f.tempDir('config-endpoint');
    const proxy = new DockerProxy(path.join(dir, 'docker.sock'));
    await proxy.up();
    try {
      const config = path.join(dir, 'config.yaml');
      fs.writeFileSync(config, `docker-endpoint: unix://${proxy.socketPath}\n`);
      // No --docker-endpoint flag: main.js asks the default socket, which the config overrides.
      const { shim, stop } = await f.startShim({ args: [`--config=${config}`], env: { DOCKER_HOST: '' } });
      assert.equal((await shim.client.runtime.Version({})).runtimeName, 'docker');
      // Asked by start-up itself: the early ask went to the default socket.
      const asked = proxy.requests.filter((r, i) => (r === 'GET /version' || r === 'GET /info') && proxy.userAgents[i] !== EARLY_USER_AGENT);
      assert.deepEqual(asked.sort(), ['GET /info', 'GET /version'], proxy.requests.slice(0, 8).join(', '));
      assert.equal((await stop()) ?? 0, 0);
    } finally {
      await proxy.down();
    }
  });

  it('fails with a clear message when Docker cannot be reached', async () => {
    const dir = f.tempDir('nodocker');
    const res = await runShimToExit([
      `--docker-endpoint=unix://${dir}/absent.sock`,
      `--container-runtime-endpoint=unix://${dir}/cri.sock`,
      `--cri-dockerd-root-directory=${dir}/root`,
    ]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /did not answer: cannot reach Docker at unix:\/\/.*absent\.sock/);
  });
});

describe('command line', () => {
  const f = useShim({ shim: false });

  it('exits 2 with a clear message on an unknown flag', async () => {
    const res = await runShimToExit(['--frobnicate']);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /frobnicate/);
    assert.match(res.stderr, /--help/);
  });

  it('exits 2 on a bad value', async () => {
    const res = await runShimToExit(['--runtime-request-timeout=forever']);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /--runtime-request-timeout: "forever" is not a duration/);
  });

  it('prints help and version, exiting 0', async () => {
    const help = await runShimToExit(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--container-runtime-endpoint/);
    const version = await runShimToExit(['--version']);
    assert.equal(version.code, 0);
    // The Node it runs on, found through its shebang: the tests' own (test/run.mjs puts it on PATH).
    assert.match(version.stdout, new RegExp(`^cri-docker-shim \\d+\\.\\d+\\.\\d+ \\(node ${process.version.replace(/\./g, '\\.')}\\)\n$`));
  });

  it('serves on tcp:// too', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as net.AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    const { shim } = await f.startShim({ args: [`--container-runtime-endpoint=tcp://127.0.0.1:${port}`] });
    assert.equal(shim.address, `127.0.0.1:${port}`);
    assert.equal((await shim.client.runtime.Version({})).runtimeName, 'docker');
  });
});
