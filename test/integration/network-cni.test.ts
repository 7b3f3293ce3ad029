// The cni network plugin through the shim, on Debian's real plugins (/usr/lib/cni), real
// iptables and real pods: addresses from the plugin, pod to pod and pod to host, host ports on
// 127.0.0.1 and on the node's own address, DNS options, bandwidth shaping, dual stack,
// NetworkReady following the conf dir, faults and restarts; and nothing left behind.
// Traffic goes only to loopback, the node's own addresses and the test's own pods.
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { BlockList, type AddressInfo } from 'node:net';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import type { PodSandboxConfig } from '../../src/cri/types';
import { hostAddresses } from '../../src/network/host-addresses';
import { rejectsWith } from '../support/client';
import { testLabels } from '../support/cleanup';
import { CNI_BIN_DIR, ipv6Unavailable, makeTestNetwork, type TestNetwork } from '../support/cni-network';
import { useShim } from '../support/fixture';
import { dockerApi } from '../support/images';
import { freeLoopbackPort, httpGet } from '../support/net-probe';
import { waitFor } from '../support/poll';
import { tempDir, type ShimProcess } from '../support/shim';
import { busybox, SLEEP_FOREVER } from '../support/pods';

let podCounter = 0;

/** busybox httpd in the test pods serves /etc: /passwd proves the answer is the pod's. */
const passwd = (host: string, port: number): Promise<string> => httpGet(host, port, '/passwd');

function podConfig(run: string, extra: Partial<PodSandboxConfig> = {}): PodSandboxConfig {
  podCounter++;
  const name = `net${podCounter}-${run}`;
  return { metadata: { name, namespace: 'cni-test', uid: `${run}-${podCounter}`, attempt: 0 }, labels: testLabels(run), ...extra };
}

async function networkReady(shim: ShimProcess): Promise<{ status: boolean; reason: string; message: string }> {
  const res = await shim.client.runtime.Status({});
  const cond = res.status!.conditions.find((c) => c.type === 'NetworkReady')!;
  return { status: cond.status, reason: cond.reason, message: cond.message };
}

/** A pod with a busybox container; returns the pod and container IDs and the pod's IPs. */
async function podWithShell(shim: ShimProcess, run: string, extra: Partial<PodSandboxConfig> = {}, command = SLEEP_FOREVER.command): Promise<{ pod: string; ctr: string; ips: string[] }> {
  const config = podConfig(run, extra);
  const { podSandboxId: pod } = await shim.client.runtime.RunPodSandbox({ config });
  const { containerId: ctr } = await shim.client.runtime.CreateContainer({ podSandboxId: pod, config: busybox(run, 'shell', { command, logPath: '' }), sandboxConfig: config });
  await shim.client.runtime.StartContainer({ containerId: ctr });
  const { status } = await shim.client.runtime.PodSandboxStatus({ podSandboxId: pod });
  const ips = [status!.network!.ip, ...status!.network!.additionalIps.map((a) => a.ip)].filter(Boolean);
  return { pod, ctr, ips };
}

async function exec(shim: ShimProcess, ctr: string, script: string, timeout = 20): Promise<{ code: number; out: string }> {
  const res = await shim.client.runtime.ExecSync({ containerId: ctr, cmd: ['sh', '-c', script], timeout });
  return { code: res.exitCode, out: res.stdout.toString() + res.stderr.toString() };
}

/** An HTTP GET from inside a container (busybox nc: the image's wget cannot resolve without NSS). */
function fetchFrom(shim: ShimProcess, ctr: string, host: string, port: number, urlPath: string): Promise<{ code: number; out: string }> {
  return exec(shim, ctr, `printf 'GET ${urlPath} HTTP/1.0\\r\\n\\r\\n' | nc -w 2 ${host} ${port}`);
}

async function removePod(shim: ShimProcess, pod: string): Promise<void> {
  await shim.client.runtime.StopPodSandbox({ podSandboxId: pod });
  await shim.client.runtime.RemovePodSandbox({ podSandboxId: pod });
}

function assertNothingLeft(net: TestNetwork, pods: readonly string[]): void {
  assert.deepEqual(net.veths(), [], 'no veth left on the bridge');
  assert.deepEqual(net.reservations(), [], 'no address held by host-local');
  for (const pod of pods) assert.deepEqual(net.rulesMentioning(pod), [], `no iptables rule names ${pod.slice(0, 12)}`);
  assert.deepEqual(net.rulesMentioning(net.subnet.split('.').slice(0, 3).join('.') + '.'), [], 'no iptables rule names the subnet');
  const results = path.join(net.cacheDir, 'results');
  assert.deepEqual(fs.existsSync(results) ? fs.readdirSync(results) : [], [], 'no cached result left');
}

/** An HTTP server on the node, answering its own name, on every address. */
async function nodeServer(): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.end('from-the-node'));
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  return { port: (server.address() as AddressInfo).port, close: () => new Promise((r) => server.close(() => r())) };
}

describe('cni network plugin', () => {
  const net = makeTestNetwork();
  const f = useShim({ args: net.shimArgs });
  f.onCleanUp(() => net.remove());
  const run = f.run;
  /** A shim of the fixture's (stopped and swept with it, whatever the test does). */
  const startShim = async (opts: { args: string[]; rootDir?: string }): Promise<ShimProcess> => (await f.startShim(opts)).shim;
  let shim: ShimProcess;
  before(() => {
    shim = f.shim;
  });

  it('gives pods addresses from the plugin; they reach each other and the node, and leave nothing behind', async () => {
    assert.equal((await networkReady(shim)).status, true);
    const server = await nodeServer();
    const a = await podWithShell(shim, run);
    const b = await podWithShell(shim, run, {}, ['httpd', '-f', '-p', '8080', '-h', '/etc']);
    try {
      for (const ip of [...a.ips, ...b.ips]) assert.ok(ip.startsWith(net.subnet.split('.').slice(0, 3).join('.') + '.'), `${ip} is in ${net.subnet}`);
      assert.notEqual(a.ips[0], b.ips[0]);
      // The address is the one inside the pod's namespace, on eth0.
      assert.match((await exec(shim, a.ctr, 'ip -o -4 addr show dev eth0')).out, new RegExp(`inet ${a.ips[0]!.replace(/\./g, '\\.')}/`));
      // Pod to pod (the firewall plugin accepts their traffic through Docker's FORWARD DROP).
      const fetched = await waitFor('pod a to fetch from pod b', async () => {
        const r = await fetchFrom(shim, a.ctr, b.ips[0]!, 8080, '/passwd');
        return /\nroot:/.test(r.out) ? r.out : undefined;
      });
      assert.match(fetched, /^HTTP\/1\.[01] 200/);
      // Pod to the node, through the bridge's address.
      const fromNode = await fetchFrom(shim, a.ctr, net.gateway, server.port, '/');
      assert.match(fromNode.out, /\r\n\r\nfrom-the-node$/, fromNode.out);
      assert.ok(net.veths().length >= 2);
      assert.equal(net.reservations().length, 2);
    } finally {
      await server.close();
      await removePod(shim, a.pod);
      await removePod(shim, b.pod);
    }
    assertNothingLeft(net, [a.pod, b.pod]);
  });

  it('serves a host port on 127.0.0.1 and on the node’s own address, and drops it with the pod', async () => {
    const hostPort = await freeLoopbackPort();
    const p = await podWithShell(shim, run, { portMappings: [{ protocol: 'TCP', containerPort: 8080, hostPort, hostIp: '' }] }, ['httpd', '-f', '-p', '8080', '-h', '/etc']);
    const nodeAddress = hostAddresses().find((a) => !a.includes(':'));
    try {
      const viaLoopback = await waitFor('the host port on 127.0.0.1', () => passwd('127.0.0.1', hostPort).catch(() => undefined));
      assert.match(viaLoopback, /^root:/);
      assert.ok(nodeAddress, 'the node has an IPv4 address');
      assert.match(await passwd(nodeAddress, hostPort), /^root:/);
      assert.ok(net.rulesMentioning(p.pod).length > 0, 'portmap wrote rules for the pod');
    } finally {
      await removePod(shim, p.pod);
    }
    await assert.rejects(passwd('127.0.0.1', hostPort));
    assertNothingLeft(net, [p.pod]);
  });

  it('writes the pod’s DNS options into resolv.conf and shapes bandwidth with the bandwidth plugin', async () => {
    const shaped = makeTestNetwork({
      extraPlugins: [{ type: 'firewall', backend: 'iptables' }, { type: 'bandwidth', capabilities: { bandwidth: true } }],
    });
    const shapedShim = await startShim({ args: shaped.shimArgs });
    try {
      const p = await podWithShell(shapedShim, run, {
        dnsConfig: { servers: ['10.96.0.10'], searches: ['svc.cluster.local'], options: ['ndots:5'] },
        annotations: { 'kubernetes.io/ingress-bandwidth': '1M', 'kubernetes.io/egress-bandwidth': '2M' },
      });
      try {
        const resolv = (await exec(shapedShim, p.ctr, 'cat /etc/resolv.conf')).out;
        assert.match(resolv, /nameserver 10\.96\.0\.10/);
        assert.match(resolv, /search svc\.cluster\.local/);
        assert.match(resolv, /options ndots:5/);
        const [veth] = shaped.veths();
        assert.ok(veth, 'the pod has a host-side veth');
        const qdiscs = execFileSync('tc', ['qdisc', 'show'], { encoding: 'utf8' });
        assert.match(qdiscs, new RegExp(`qdisc tbf \\S+: dev ${veth} root .*rate 1Mbit`), qdiscs);
        assert.match(qdiscs, /qdisc tbf \S+: dev bwp\S+ root .*rate 2Mbit/, 'egress is shaped on the plugin’s ifb device');
      } finally {
        await removePod(shapedShim, p.pod);
      }
      assert.doesNotMatch(execFileSync('tc', ['qdisc', 'show'], { encoding: 'utf8' }), /rate 2Mbit/, 'the ifb device went with the pod');
      assertNothingLeft(shaped, [p.pod]);
    } finally {
      await shapedShim.stop();
      shaped.remove();
    }
  });

  it('reports both families when the network gives both (dual stack)', async (t) => {
    const why = ipv6Unavailable();
    if (why) {
      t.skip(why);
      console.log(`# dual stack skipped: ${why}`);
      return;
    }
    const dual = makeTestNetwork({ ipv6: true });
    const dualShim = await startShim({ args: dual.shimArgs });
    try {
      const p = await podWithShell(dualShim, run);
      try {
        assert.equal(p.ips.length, 2);
        assert.ok(!p.ips[0]!.includes(':'), `primary ${p.ips[0]} is IPv4`);
        const [prefix6, bits6] = dual.subnet6!.split('/');
        const range6 = new BlockList();
        range6.addSubnet(prefix6!, Number(bits6), 'ipv6');
        assert.ok(range6.check(p.ips[1]!, 'ipv6'), `${p.ips[1]} is in ${dual.subnet6}`);
        assert.match((await exec(dualShim, p.ctr, 'ip -o -6 addr show dev eth0 scope global')).out, new RegExp(p.ips[1]!));
      } finally {
        await removePod(dualShim, p.pod);
      }
      assertNothingLeft(dual, [p.pod]);
    } finally {
      await dualShim.stop();
      dual.remove();
    }
  });

  it('follows the conf dir: NetworkReady false with the reason, true once a usable config appears', async () => {
    const empty = makeTestNetwork();
    fs.rmSync(path.join(empty.confDir, '10-test.conflist'));
    const watching = await startShim({ args: empty.shimArgs });
    try {
      const none = await networkReady(watching);
      assert.deepEqual([none.status, none.reason], [false, 'NetworkPluginNotReady']);
      assert.match(none.message, /no network config found/);
      await assert.rejects(watching.client.runtime.RunPodSandbox({ config: podConfig(run) }), rejectsWith(Code.UNAVAILABLE, /not ready: no network config/));
      // A config whose plugin binary is missing says so.
      empty.writeConf('05-missing.conflist', { cniVersion: '1.0.0', name: 'missing', plugins: [{ type: 'no-such-plugin' }] });
      const missing = await waitFor('the missing binary to be reported', async () => {
        const s = await networkReady(watching);
        return /no-such-plugin/.test(s.message) ? s : undefined;
      });
      assert.equal(missing.status, false);
      assert.match(missing.message, /05-missing\.conflist: plugin binaries not found: no-such-plugin/);
      // A good config beside it (later in lexical order) is used.
      empty.writeConf('10-good.conflist', JSON.parse(fs.readFileSync(path.join(net.confDir, '10-test.conflist'), 'utf8').replace(new RegExp(net.bridge, 'g'), empty.bridge).replace(new RegExp(net.name, 'g'), empty.name).replace(new RegExp(net.ipamDir, 'g'), empty.ipamDir)));
      await waitFor('NetworkReady to turn true', async () => (await networkReady(watching)).status);
      // One that wants the pod CIDR is not ready until UpdateRuntimeConfig gives it.
      empty.writeConf('01-ranges.conflist', { cniVersion: '1.0.0', name: 'ranges', plugins: [{ type: 'bridge', bridge: empty.bridge, ipam: { type: 'host-local', dataDir: empty.ipamDir, ranges: [[{ subnet: empty.subnet }]] } }, { type: 'portmap', capabilities: { portMappings: true, ipRanges: true } }] });
      const wants = await waitFor('the ipRanges network to wait for a pod CIDR', async () => {
        const s = await networkReady(watching);
        return /pod CIDR/.test(s.message) ? s : undefined;
      });
      assert.equal(wants.status, false);
      await watching.client.runtime.UpdateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: empty.subnet } } });
      assert.equal((await networkReady(watching)).status, true);
    } finally {
      await watching.stop();
      empty.remove();
    }
  });

  it('fails RunPodSandbox with the plugin’s own message and leaves nothing behind; when the undo fails too, leaves the pod NOTREADY for a later Stop', async () => {
    // A plugin after bridge and firewall (which have taken a veth, an address and rules) whose
    // ADD fails, and whose DEL fails too while a marker file exists.
    const bin = tempDir('cni-failing');
    const marker = path.join(bin, 'fail-del');
    fs.writeFileSync(
      path.join(bin, 'cds-failing-add'),
      `#!${process.execPath}
const fs = require('fs');
const conf = JSON.parse(fs.readFileSync(0, 'utf8'));
const say = (doc) => process.stdout.write(JSON.stringify(doc));
switch (process.env.CNI_COMMAND) {
  case 'VERSION': say({ cniVersion: conf.cniVersion, supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] }); break;
  case 'ADD': say({ cniVersion: conf.cniVersion, code: 11, msg: 'no room for this pod' }); process.exit(1);
  case 'DEL': if (fs.existsSync(conf.marker)) { say({ cniVersion: conf.cniVersion, code: 11, msg: 'told to fail DEL' }); process.exit(1); } break;
}
`,
      { mode: 0o755 },
    );
    const failing = makeTestNetwork({ extraPlugins: [{ type: 'firewall', backend: 'iptables' }, { type: 'cds-failing-add', marker }] });
    const failingShim = await startShim({ args: [...failing.shimArgs, `--cni-bin-dir=${bin},${CNI_BIN_DIR}`] });
    try {
      const config = podConfig(run);
      await assert.rejects(failingShim.client.runtime.RunPodSandbox({ config }), rejectsWith(Code.UNKNOWN, /CNI plugin cds-failing-add failed: .*no room for this pod/));
      const left = await dockerApi().listContainers({ all: true, filters: { label: [`io.kubernetes.pod.name=${config.metadata!.name}`] } });
      assert.deepEqual(left, [], 'no pause container');
      const byName = await dockerApi().listContainers({ all: true, filters: { name: [config.metadata!.name!] } });
      assert.deepEqual(byName, [], 'no pause container by name');
      assertNothingLeft(failing, []);

      // The undo's DEL fails: what a later DEL needs stays, and so does the pod, NOTREADY.
      fs.writeFileSync(marker, '');
      const again = podConfig(run, { metadata: { ...config.metadata!, attempt: 1 } });
      await assert.rejects(failingShim.client.runtime.RunPodSandbox({ config: again }), rejectsWith(Code.UNKNOWN, /no room for this pod/));
      const { items } = await failingShim.client.runtime.ListPodSandbox({ filter: { labelSelector: { 'cri-docker-shim.test/run': run } } });
      const kept = items.filter((i) => i.metadata?.name === config.metadata!.name);
      assert.equal(kept.length, 1, 'the pod is kept for kubelet to stop');
      assert.equal(kept[0]!.state, 'SANDBOX_NOTREADY');
      assert.ok(fs.readdirSync(path.join(failing.cacheDir, 'results')).some((f) => f.includes(kept[0]!.id)), 'its CNI cache entry is kept');
      fs.rmSync(marker);
      await removePod(failingShim, kept[0]!.id);
      assertNothingLeft(failing, [kept[0]!.id]);
    } finally {
      await failingShim.stop();
      failing.remove();
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });

  it('a teardown that fails still kills the pod (NOTREADY, Stop fails so kubelet retries); the retry releases it all', async () => {
    // A plugin at the end of the chain whose DEL fails while a marker file exists.
    const bin = tempDir('cni-flaky');
    const marker = path.join(bin, 'fail-del');
    fs.writeFileSync(
      path.join(bin, 'cds-flaky-del'),
      `#!${process.execPath}
const fs = require('fs');
const conf = JSON.parse(fs.readFileSync(0, 'utf8'));
const say = (doc) => process.stdout.write(JSON.stringify(doc));
switch (process.env.CNI_COMMAND) {
  case 'VERSION': say({ cniVersion: conf.cniVersion, supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] }); break;
  case 'ADD': say(conf.prevResult); break;
  case 'DEL': if (fs.existsSync(conf.marker)) { say({ cniVersion: conf.cniVersion, code: 11, msg: 'told to fail DEL' }); process.exit(1); } break;
}
`,
      { mode: 0o755 },
    );
    const flaky = makeTestNetwork({
      extraPlugins: [{ type: 'portmap', capabilities: { portMappings: true } }, { type: 'firewall', backend: 'iptables' }, { type: 'cds-flaky-del', marker }],
    });
    const flakyShim = await startShim({ args: [...flaky.shimArgs, `--cni-bin-dir=${bin},${CNI_BIN_DIR}`] });
    try {
      const { pod, ctr } = await podWithShell(flakyShim, run);
      fs.writeFileSync(marker, '');
      await assert.rejects(flakyShim.client.runtime.StopPodSandbox({ podSandboxId: pod }), rejectsWith(Code.UNKNOWN, /told to fail DEL/));
      assert.equal((await dockerApi().getContainer(ctr).inspect()).State.Running, false, 'the pod\'s container was killed');
      assert.equal((await dockerApi().getContainer(pod).inspect()).State.Running, false, 'the pause container was killed');
      const { status } = await flakyShim.client.runtime.PodSandboxStatus({ podSandboxId: pod });
      assert.equal(status?.state, 'SANDBOX_NOTREADY');
      // Every plugin's DEL ran (the others released what they hold), but the chain's did not
      // succeed, so the cached result a later DEL passes is kept.
      assert.ok(fs.readdirSync(path.join(flaky.cacheDir, 'results')).length > 0, 'the cached ADD result is kept for the retry');

      fs.rmSync(marker);
      await flakyShim.client.runtime.StopPodSandbox({ podSandboxId: pod });
      await flakyShim.client.runtime.RemovePodSandbox({ podSandboxId: pod });
      await waitFor('the kernel to drop the dead namespace\'s veth', () => flaky.veths().length === 0);
      assertNothingLeft(flaky, [pod]);
    } finally {
      await flakyShim.stop();
      flaky.remove();
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });

  it('asks a plugin its versions again after a failed VERSION, and again when its binary is replaced, without a restart', async () => {
    const bin = tempDir('cni-version');
    const plugin = path.join(bin, 'cds-versions');
    const failedOnce = path.join(bin, 'failed-once');
    /** A plugin that supports `versions`; with `failFirst`, its first VERSION fails. */
    const install = (versions: string[], failFirst: boolean): void => {
      const tmp = `${plugin}.new`;
      fs.writeFileSync(
        tmp,
        `#!${process.execPath}
const fs = require('fs');
const conf = JSON.parse(fs.readFileSync(0, 'utf8'));
const say = (doc) => process.stdout.write(JSON.stringify(doc));
switch (process.env.CNI_COMMAND) {
  case 'VERSION':
    if (${failFirst} && !fs.existsSync(${JSON.stringify(failedOnce)})) { fs.writeFileSync(${JSON.stringify(failedOnce)}, ''); process.exit(1); }
    say({ cniVersion: conf.cniVersion, supportedVersions: ${JSON.stringify(versions)} }); break;
  case 'ADD': say(conf.prevResult); break;
}
`,
        { mode: 0o755 },
      );
      fs.renameSync(tmp, plugin);
    };
    install(['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'], true);
    const probed = makeTestNetwork({ extraPlugins: [{ type: 'cds-versions' }] });
    const probedShim = await startShim({ args: [...probed.shimArgs, `--cni-bin-dir=${bin},${CNI_BIN_DIR}`] });
    try {
      const first = await networkReady(probedShim);
      assert.equal(first.status, false, 'not ready while its VERSION fails');
      assert.match(first.message, /no answer to VERSION from cds-versions|asking cds-versions/);
      await waitFor('the failed VERSION to be asked again, and NetworkReady', async () => (await networkReady(probedShim)).status, { timeoutMs: 20_000, intervalMs: 250 });
      assert.ok(fs.existsSync(failedOnce), 'the first VERSION did fail');

      install(['0.3.1'], false);
      const refused = await waitFor(
        'the replaced binary to be asked again',
        async () => {
          const c = await networkReady(probedShim);
          // "asking cds-versions ...": the new binary's VERSION still under way past Status's
          // 500 ms wait (a loaded machine); its answer is the one looked for.
          return c.status || /asking cds-versions/.test(c.message) ? undefined : c;
        },
        { timeoutMs: 20_000, intervalMs: 250 },
      );
      assert.match(refused.message, /not supported by cds-versions/);
    } finally {
      await probedShim.stop();
      probed.remove();
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });

  it('keeps running pods’ networks and host ports across a shim restart; Stop after restart releases them', async () => {
    const root = tempDir('cni-restart');
    const hostPort = await freeLoopbackPort();
    let first: ShimProcess | undefined = await startShim({ args: net.shimArgs, rootDir: root });
    let second: ShimProcess | undefined;
    try {
      const p = await podWithShell(first, run, { portMappings: [{ protocol: 'TCP', containerPort: 8080, hostPort, hostIp: '127.0.0.1' }] }, ['httpd', '-f', '-p', '8080', '-h', '/etc']);
      await waitFor('the host port', () => passwd('127.0.0.1', hostPort).catch(() => undefined));
      await first.stop();
      first = undefined;
      second = await startShim({ args: net.shimArgs, rootDir: root });
      // The restarted shim CHECKs the networks of the pods still running (spec 1.0.0 here). What
      // a plugin finds is only logged: Debian's portmap 1.1.1 fails CHECK of an IPv4-only pod
      // (it looks for an IPv6 chain it never made), so failures cannot be asserted away here.
      const restarted = second;
      const checked = await waitFor('the restarted shim to CHECK the running pod', () => restarted.output().split('\n').find((l) => l.includes('CNI networks of running pods checked')));
      assert.match(checked, /"checked":1,/);
      const { status } = await second.client.runtime.PodSandboxStatus({ podSandboxId: p.pod });
      assert.equal(status?.network?.ip, p.ips[0], 'the IP survives the restart');
      assert.match(await passwd('127.0.0.1', hostPort), /^root:/, 'the host port still answers');
      await removePod(second, p.pod);
      await assert.rejects(passwd('127.0.0.1', hostPort));
      assertNothingLeft(net, [p.pod]);
    } finally {
      await first?.stop();
      await second?.stop();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('adopts a pod whose CNI cache libcni wrote (cri-dockerd: a 0.2.0 loopback, no cniArgs) beside a torn file: its IP, and a Stop that leaves nothing', async () => {
    const root = tempDir('cni-adopt');
    let first: ShimProcess | undefined = await startShim({ args: net.shimArgs, rootDir: root });
    let second: ShimProcess | undefined;
    try {
      const p = await podWithShell(first, run);
      await first.stop();
      first = undefined;
      // The cache as cri-dockerd (libcni) leaves it for the same pod.
      const results = path.join(net.cacheDir, 'results');
      const eth0File = path.join(results, `${net.name}-${p.pod}-eth0`);
      const ours = JSON.parse(fs.readFileSync(eth0File, 'utf8')) as Record<string, unknown>;
      fs.writeFileSync(eth0File, JSON.stringify({ kind: 'cniCacheV1', containerId: p.pod, config: ours.config, ifName: 'eth0', networkName: net.name, netns: '/proc/1/ns/net', cniArgs: ours.cniArgs, result: ours.result }));
      const loopback = { cniVersion: '0.2.0', name: 'cni-loopback', plugins: [{ type: 'loopback' }] };
      fs.writeFileSync(path.join(results, `cni-loopback-${p.pod}-lo`), JSON.stringify({ kind: 'cniCacheV1', containerId: p.pod, config: Buffer.from(JSON.stringify(loopback)).toString('base64'), ifName: 'lo', networkName: 'cni-loopback', result: { cniVersion: '0.2.0', ip4: { ip: '127.0.0.1/8' }, dns: {} } }));
      fs.writeFileSync(path.join(results, `stale-${p.pod}-eth0`), '{"kind":"cniCacheV1","containerId":');
      second = await startShim({ args: net.shimArgs, rootDir: root });
      const { status } = await second.client.runtime.PodSandboxStatus({ podSandboxId: p.pod });
      assert.equal(status?.network?.ip, p.ips[0], 'the IP from libcni\'s entry');
      await removePod(second, p.pod);
      assertNothingLeft(net, [p.pod]);
      assert.match(second.output(), /a CNI cache file cannot be used as it is/, 'the torn file is logged');
    } finally {
      await first?.stop();
      await second?.stop();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('releases a pod whose network namespace is already gone, and a repeated Stop is harmless', async () => {
    const config = podConfig(run);
    const { podSandboxId: pod } = await shim.client.runtime.RunPodSandbox({ config });
    assert.equal(net.reservations().length, 1);
    // The pause process dies behind the shim's back: its namespace goes with it.
    await dockerApi().getContainer(pod).kill();
    await waitFor('the pause container to stop', async () => !(await dockerApi().getContainer(pod).inspect()).State.Running);
    await shim.client.runtime.StopPodSandbox({ podSandboxId: pod });
    await shim.client.runtime.StopPodSandbox({ podSandboxId: pod });
    await shim.client.runtime.RemovePodSandbox({ podSandboxId: pod });
    // With the namespace gone, its veth is the kernel's to remove, and the kernel destroys a
    // namespace's devices a moment after its last process exits (seen lagging in CI).
    await waitFor('the dead namespace\'s veth to go', () => net.veths().length === 0, { timeoutMs: 10_000 });
    assertNothingLeft(net, [pod]);
  });

  // The chain bridge, portmap, firewall, with a plugin that hangs in its ADD put at each step:
  // the shim is killed there, and the next shim's Stop and Remove must leave nothing. After
  // firewall, its rules name the pod's address, which its DEL finds only in the progress ADD
  // left on disk.
  const CHAIN = [{ type: 'portmap', capabilities: { portMappings: true } }, { type: 'firewall', backend: 'iptables' }];
  for (const [step, after] of [[0, 'before bridge'], [1, 'after bridge'], [2, 'after portmap'], [3, 'after firewall']] as const) {
    it(`after a kill -9 in RunPodSandbox's ADD ${after}, the next shim’s Stop and Remove leave nothing`, async () => {
      // A plugin that stops in its ADD: it writes its PID, then waits to be killed.
      const bin = tempDir('cni-slow-bin');
      for (const name of fs.readdirSync(CNI_BIN_DIR)) fs.symlinkSync(path.join(CNI_BIN_DIR, name), path.join(bin, name));
      const started = path.join(bin, 'started');
      const version = '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}';
      fs.writeFileSync(path.join(bin, 'hang'), `#!/bin/sh\nif [ "$CNI_COMMAND" = ADD ]; then echo $$ > ${started}.tmp && mv ${started}.tmp ${started}; exec sleep 600; fi\necho '${version}'\n`, { mode: 0o755 });
      const plugins = [...CHAIN.slice(0, Math.max(0, step - 1)), { type: 'hang' }, ...CHAIN.slice(Math.max(0, step - 1))];
      const hang = step === 0 ? makeTestNetwork({ extraPlugins: CHAIN, leading: [{ type: 'hang' }] }) : makeTestNetwork({ extraPlugins: plugins });
      const root = tempDir('cni-kill');
      const args = [...hang.shimArgs, `--cni-bin-dir=${bin}`];
      let shim1: ShimProcess | undefined = await startShim({ args, rootDir: root });
      let shim2: ShimProcess | undefined;
      try {
        const config = podConfig(run);
        const running = shim1.client.runtime.RunPodSandbox({ config }).catch((err: Error) => err);
        await waitFor('the plugin chain to reach the plugin that hangs', () => fs.existsSync(started), { timeoutMs: 60_000 });
        if (step >= 1) assert.equal(hang.reservations().length, 1, 'the bridge plugin already holds an address');
        if (step === 3) assert.ok(hang.rulesMentioning(hang.reservations()[0]!).length > 0, 'the firewall already has rules for it');
        await shim1.stop('SIGKILL');
        shim1 = undefined;
        await running;
        process.kill(Number(fs.readFileSync(started, 'utf8').trim()), 'SIGKILL');
        fs.writeFileSync(path.join(bin, 'hang'), `#!/bin/sh\necho '${version}'\n`, { mode: 0o755 });
        shim2 = await startShim({ args, rootDir: root });
        const { items } = await shim2.client.runtime.ListPodSandbox({ filter: { labelSelector: { 'cri-docker-shim.test/run': run } } });
        const mine = items.filter((i) => i.metadata?.name === config.metadata!.name);
        assert.equal(mine.length, 1, 'the half-made pod is listed');
        await removePod(shim2, mine[0]!.id);
        await waitFor('the kernel to drop the dead namespace\'s veth', () => hang.veths().length === 0);
        assertNothingLeft(hang, [mine[0]!.id]);
        const left = await dockerApi().listContainers({ all: true, filters: { id: [mine[0]!.id] } });
        assert.deepEqual(left, []);
      } finally {
        await shim1?.stop('SIGKILL');
        await shim2?.stop();
        hang.remove();
        fs.rmSync(bin, { recursive: true, force: true });
        fs.rmSync(root, { recursive: true, force: true });
      }
    });
  }
});
