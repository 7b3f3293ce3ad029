// A whole node moved from cri-dockerd to the shim (issue 19): pods made as cri-dockerd makes
// them (test/support/cri-dockerd-node.ts: its names, labels, json-file log symlinks,
// checkpoints, and the real CNI plugins with libcni's cache, loopback at 0.2.0 among it) get
// full service from the shim, and go with nothing left: no veth, no address held by
// host-local, no iptables chain or rule of theirs, no cache file, no checkpoint. One pod's
// cache file is torn: reads still answer, and its teardown falls back to a DEL without it.
// Traffic goes only to 127.0.0.1 and the test's own pods.
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { TEST_LABEL } from '../support/cleanup';
import { makeTestNetwork } from '../support/cni-network';
import { makeCriDockerdNode, type CriDockerdNode, type CriDockerdPod } from '../support/cri-dockerd-node';
import { useShim } from '../support/fixture';
import { dockerApi } from '../support/images';
import { freeLoopbackPort, httpGet } from '../support/net-probe';
import { busybox } from '../support/pods';
import { waitFor } from '../support/poll';
import type { ShimProcess } from '../support/shim';
import { collect, openStream, spdyConnect } from '../support/streaming-clients';

/** busybox httpd serves /etc in the web pod: /passwd proves the answer is the pod's. */
const WEB = ['sh', '-c', 'echo web-says-hello; exec httpd -f -p 8080 -h /etc'];
const sayThenSleep = (name: string): string[] => ['sh', '-c', `echo ${name}-says-hello; exec sleep 3600`];

describe('a node cri-dockerd left, adopted by the shim', () => {
  const f = useShim({ shim: false });
  // bridge (masquerading: a chain per pod), host-local, portmap; cri-dockerd's loopback beside.
  // Named as Calico names its network: its cache files list after cni-loopback's.
  const net = makeTestNetwork({ namePrefix: 'k8s-pod-network', cniVersion: '0.4.0', ipMasq: true, extraPlugins: [{ type: 'portmap', capabilities: { portMappings: true } }] });
  f.onCleanUp(() => net.remove());
  let node: CriDockerdNode;
  let shim: ShimProcess;
  let web: CriDockerdPod;
  let plain: CriDockerdPod;
  let torn: CriDockerdPod;
  let hostPort: number;
  const results = path.join(net.cacheDir, 'results');

  before(async () => {
    hostPort = await freeLoopbackPort();
    node = await makeCriDockerdNode(f, net, [
      { name: 'web', command: WEB, hostPort: { containerPort: 8080, hostPort, hostIp: '127.0.0.1' } },
      { name: 'plain', command: sayThenSleep('plain') },
      { name: 'torn', command: sayThenSleep('torn') },
    ]);
    [web, plain, torn] = node.pods as [CriDockerdPod, CriDockerdPod, CriDockerdPod];
    // The pod network's entry of one pod, torn as by a write cut short.
    fs.writeFileSync(path.join(results, torn.cacheFiles[1]!), '{"kind":"cniCacheV1","contai');
    shim = (await f.startShim({ rootDir: node.rootDir, args: net.shimArgs })).shim;
    for (const p of node.pods) f.trackPod(p.id, shim.client);
  });

  it('made what cri-dockerd leaves: addresses, chains, cache files and checkpoints of each pod', () => {
    assert.equal(net.reservations().length, 3);
    assert.equal(net.veths().length, 3);
    for (const p of node.pods) {
      assert.deepEqual(p.cacheFiles, [`cni-loopback-${p.id}-eth0`, `${net.name}-${p.id}-eth0`]);
      assert.ok(p.chains.length >= 1, `the bridge masquerades ${p.id.slice(0, 12)} through a chain of its own`);
      assert.ok(fs.lstatSync(p.logPath).isSymbolicLink());
    }
    assert.ok(web.chains.length >= 2, 'portmap made a DNAT chain for the web pod');
    assert.deepEqual(fs.readdirSync(node.checkpointDir).sort(), node.pods.map((p) => p.id).sort());
  });

  it('reports every pod READY with its IP and every container RUNNING, with its json-file log behind the symlink', async () => {
    const listed = (await shim.client.runtime.ListPodSandbox({ filter: { labelSelector: f.labels() } })).items;
    assert.deepEqual(listed.map((s) => s.id).sort(), node.pods.map((p) => p.id).sort());
    for (const p of node.pods) {
      const { status } = await shim.client.runtime.PodSandboxStatus({ podSandboxId: p.id });
      assert.equal(status!.state, 'SANDBOX_READY', p.config.metadata!.name);
      assert.deepEqual(status!.metadata, p.config.metadata);
      assert.deepEqual(status!.labels, { ...p.config.labels, 'io.kubernetes.container.name': 'POD' }, "kubelet's labels and the one cri-dockerd adds");
      assert.deepEqual(status!.annotations, p.config.annotations);
      assert.equal(status!.linux!.namespaces!.options!.network, 'POD');
      // (The torn pod's address is in no cache file the shim can read.)
      if (p !== torn) assert.equal(status!.network!.ip, p.ip, `the IP of ${p.config.metadata!.name} from libcni's cache`);
      const app = (await shim.client.runtime.ContainerStatus({ containerId: p.app })).status!;
      assert.equal(app.state, 'CONTAINER_RUNNING');
      assert.equal(app.metadata!.name, p.appName);
      assert.equal(app.logPath, p.logPath);
      const said = `${p.config.metadata!.name!.split('-')[0]!}-says-hello`;
      const log = await waitFor(`${said} in the log`, () => {
        const text = fs.readFileSync(app.logPath, 'utf8');
        return text.includes(said) ? text : undefined;
      });
      assert.match(log, new RegExp(`^\\{"log":"${said}\\\\n","stream":"stdout","time":"[^"]+"\\}\\n`), "Docker's json-file lines, as kubelet reads them");
    }
  });

  it("CHECKs the pod network of the pods whose cache it can read once started (not cri-dockerd's loopback)", async () => {
    // Whether portmap agrees is its own business: 1.1.1 looks for an IPv6 chain an IPv4 pod
    // never has (containernetworking/plugins#819).
    const line = await waitFor('the start-up CHECK to be logged', () => shim.output().split('\n').find((l) => l.includes('CNI networks of running pods checked')));
    assert.equal((JSON.parse(line) as { checked: number }).checked, 2);
  });

  it('execs in them, and answers their stats and metrics', async () => {
    const ipOut = await shim.client.runtime.ExecSync({ containerId: web.app, cmd: ['ip', '-o', '-4', 'addr', 'show', 'dev', 'eth0'], timeout: 20 });
    assert.equal(ipOut.exitCode, 0);
    assert.match(ipOut.stdout.toString(), new RegExp(`inet ${web.ip.replace(/\./g, '\\.')}/`));
    const { stats } = await shim.client.runtime.ContainerStats({ containerId: plain.app });
    assert.equal(stats!.attributes!.id, plain.app);
    assert.ok(Number(stats!.memory!.workingSetBytes!.value) > 0);
    const pods = (await shim.client.runtime.ListPodSandboxStats({ filter: { labelSelector: f.labels() } })).stats;
    assert.deepEqual(pods.map((s) => s.attributes!.id).sort(), node.pods.map((p) => p.id).sort());
    for (const s of pods) assert.equal(s.linux!.containers.length, 1);
    const metrics = (await shim.client.runtime.ListPodSandboxMetrics({})).podMetrics;
    for (const p of node.pods) {
      const m = metrics.find((x) => x.podSandboxId === p.id);
      assert.ok(m, `metrics of ${p.config.metadata!.name}`);
      assert.deepEqual(m.containerMetrics.map((c) => c.containerId), [p.app]);
      assert.ok(m.metrics.some((x) => x.name === 'container_network_receive_bytes_total' && x.labelValues[5] === 'eth0'));
    }
  });

  it('serves the host port on 127.0.0.1, and forwards a port of the pod', async () => {
    const body = await waitFor('the host port on 127.0.0.1', () => httpGet('127.0.0.1', hostPort, '/passwd').catch(() => undefined));
    assert.match(body, /^root:/);
    const { url } = await shim.client.runtime.PortForward({ podSandboxId: web.id, port: [8080] });
    const { conn } = await spdyConnect(url, ['portforward.k8s.io']);
    const error = await openStream(conn, { streamType: 'error', port: '8080', requestID: '0' });
    error.end();
    const data = await openStream(conn, { streamType: 'data', port: '8080', requestID: '0' });
    const errorText = collect(error);
    const forwarded = collect(data);
    data.end('GET /passwd HTTP/1.0\r\n\r\n');
    assert.match((await forwarded).toString(), /^HTTP\/1\.[01] 200[^]*\r\n\r\nroot:/);
    assert.equal((await errorText).toString(), '');
  });

  it("gives a new container in an adopted pod the shim's own CRI log, leaving the old one's symlink", async () => {
    const config = busybox(f.run, 'second', { command: sayThenSleep('second'), logPath: 'second/0.log' });
    const { containerId } = await shim.client.runtime.CreateContainer({ podSandboxId: plain.id, config, sandboxConfig: plain.config });
    await shim.client.runtime.StartContainer({ containerId });
    const logPath = path.join(plain.config.logDirectory!, 'second', '0.log');
    assert.equal((await shim.client.runtime.ContainerStatus({ containerId })).status!.logPath, logPath);
    const log = await waitFor('second-says-hello in its CRI log', () => {
      const text = fs.existsSync(logPath) ? fs.readFileSync(logPath, 'utf8') : '';
      return text.includes('second-says-hello') ? text : undefined;
    });
    assert.match(log, /^\S+ stdout F second-says-hello\n/, 'CRI log format');
    assert.ok(fs.lstatSync(logPath).isFile(), 'a file the shim writes, no symlink');
    assert.ok(fs.lstatSync(plain.logPath).isSymbolicLink(), "the adopted app's log is still Docker's");
  });

  it('answers reads of the pod whose cache file is torn, and tears it down without it (logged)', async () => {
    const { status } = await shim.client.runtime.PodSandboxStatus({ podSandboxId: torn.id, verbose: true });
    assert.equal(status!.state, 'SANDBOX_READY');
    // Every read answers (none turns the torn file into INTERNAL).
    await shim.client.runtime.ListPodSandbox({});
    await shim.client.runtime.PodSandboxStats({ podSandboxId: torn.id });
    await shim.client.runtime.ContainerStatus({ containerId: torn.app, verbose: true });
    await shim.client.runtime.ListPodSandboxMetrics({});
    await shim.client.runtime.StopPodSandbox({ podSandboxId: torn.id });
    const warning = shim.output().split('\n').find((l) => l.includes('a CNI cache file cannot be used') && l.includes(torn.id));
    assert.ok(warning, 'the unusable cache file is logged');
    assert.match(warning, new RegExp(`${net.name}-${torn.id}-eth0`));
    assert.equal(net.reservations().length, 2, "host-local released the torn pod's address");
    assert.equal(net.veths().length, 2, 'its veth went with the fallback DEL');
    assertPodGone(torn);
    await shim.client.runtime.RemovePodSandbox({ podSandboxId: torn.id });
    assert.equal(fs.existsSync(path.join(node.checkpointDir, torn.id)), false);
  });

  it('stops and removes the pods with nothing left: veths, addresses, chains, rules, cache files, checkpoints', async () => {
    for (const p of [web, plain]) {
      await shim.client.runtime.StopPodSandbox({ podSandboxId: p.id });
      await shim.client.runtime.RemovePodSandbox({ podSandboxId: p.id });
    }
    assert.deepEqual(net.veths(), [], 'no veth left on the bridge');
    assert.deepEqual(net.reservations(), [], 'no address held by host-local');
    for (const p of node.pods) assertPodGone(p);
    assert.deepEqual(fs.readdirSync(results), [], 'no cache file left');
    assert.deepEqual(fs.readdirSync(node.checkpointDir), [], 'no checkpoint left');
    assert.deepEqual(await dockerApi().listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${f.run}`] } }), []);
    await assert.rejects(httpGet('127.0.0.1', hostPort, '/passwd'));
  });

  /** Nothing of the pod's in iptables: no rule naming it, none of the chains its plugins made. */
  function assertPodGone(p: CriDockerdPod): void {
    assert.deepEqual(net.rulesMentioning(p.id), [], `no iptables rule names ${p.id.slice(0, 12)}`);
    const saved = ['iptables-save', 'ip6tables-save'].map((cmd) => execFileSync(cmd, [], { encoding: 'utf8' })).join('\n');
    for (const chain of p.chains) assert.ok(!saved.includes(chain), `chain ${chain} of ${p.id.slice(0, 12)} is gone`);
    for (const file of p.cacheFiles) assert.equal(fs.existsSync(path.join(results, file)), false, `${file} is gone`);
  }
});
