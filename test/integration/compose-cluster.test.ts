// The docker-compose test cluster, as a user brings it up: two nodes (each a privileged
// container with its own dockerd and the shim) and a local registry, from the product's
// docker-compose.yml under a project name, network and socket directory of the test's own.
// Through each node's socket: pull from the registry, run a pod with a container, reach the
// other node's pod and the registry; restart one node's shim and find its pods again; then
// `down -v` and nothing of the cluster is left on the host.
import { strict as assert } from 'node:assert';
import { execFile, execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { criClient, type CriClient } from '../support/client';
import { newTestRun, testLabels } from '../support/cleanup';
import {
  buildImages,
  composeProject,
  composeUnavailable,
  footprintOf,
  hostRuncWrapper,
  leftoversOf,
  type ComposeProject,
  type HostFootprint,
} from '../support/compose';
import { TEST_BUSYBOX_IMAGE, TEST_PAUSE_IMAGE } from '../support/images';
import { waitFor } from '../support/poll';
import { freePort } from '../support/registry';

const run = promisify(execFile);
const NODES = ['node-1', 'node-2'] as const;
type NodeName = (typeof NODES)[number];

/** A /24 on 10.248.x that no Docker network here uses yet. */
function freeClusterNet(): string {
  const used = execFileSync('sh', ['-c', "docker network inspect -f '{{range .IPAM.Config}}{{.Subnet}} {{end}}' $(docker network ls -q)"], {
    encoding: 'utf8',
  });
  for (;;) {
    const prefix = `10.248.${randomInt(256)}`;
    if (!used.includes(`${prefix}.`)) return prefix;
  }
}

/** Pushes a host image into the cluster's registry through its published port; returns the in-cluster name. */
async function pushToCluster(registryPort: number, image: string, name: string): Promise<string> {
  const hostRef = `127.0.0.1:${registryPort}/${name}`;
  await run('docker', ['tag', image, hostRef]);
  try {
    await run('docker', ['push', hostRef], { timeout: 120_000 });
  } finally {
    await run('docker', ['rmi', '--no-prune', hostRef]).catch(() => undefined);
  }
  return `registry:5000/${name}`;
}

/** A web server that answers /cgi-bin/ip with the address the request came from. */
const WHO_ASKS_SERVER = [
  'mkdir -p /tmp/www/cgi-bin',
  'printf \'#!/bin/sh\\necho\\necho "$REMOTE_ADDR"\\n\' >/tmp/www/cgi-bin/ip',
  'chmod +x /tmp/www/cgi-bin/ip',
  'exec httpd -f -p 8080 -h /tmp/www',
].join(' && ');

interface NodePod {
  podId: string;
  containerId: string;
  ip: string;
}

const unavailable = composeUnavailable();

describe('docker-compose test cluster', { skip: unavailable }, () => {
  const testRun = newTestRun();
  const clusterNet = freeClusterNet();
  let project: ComposeProject;
  let clusterDir: string;
  let registryPort: number;
  let busyboxRef: string;
  let footprint: HostFootprint | undefined;
  const clients = new Map<NodeName, CriClient>();
  const pods = new Map<NodeName, NodePod>();
  const client = (node: NodeName): CriClient => clients.get(node)!;
  const socketOf = (node: NodeName): string => path.join(clusterDir, node, 'cri-docker-shim.sock');

  before(async () => {
    const started = Date.now();
    await buildImages();
    const built = Date.now();
    registryPort = await freePort();
    project = composeProject('cdscluster', {
      CLUSTER_NET: clusterNet,
      REGISTRY_PORT: String(registryPort),
      PAUSE_IMAGE: 'registry:5000/cds/pause:test',
    });
    clusterDir = path.join(project.dir, 'cluster');
    project.env.CLUSTER_DIR = clusterDir;
    const wrapper = hostRuncWrapper();
    if (wrapper) {
      // This kernel needs the runc wrapper the host's dockerd runs; each node's dockerd gets it too.
      const node = [
        '    environment:',
        `      DOCKERD_ARGS: --add-runtime runc-sandbox=/usr/local/bin/runc-sandbox --default-runtime runc-sandbox`,
        '    volumes:',
        `      - ${wrapper}:/usr/local/bin/runc-sandbox:ro`,
      ].join('\n');
      project.addOverride(`services:\n${NODES.map((n) => `  ${n}:\n${node}\n`).join('')}`);
    }
    await project.compose(['up', '-d']);
    footprint = await footprintOf(project);
    for (const node of NODES) {
      clients.set(node, criClient(`unix://${socketOf(node)}`));
      await waitFor(`${node}'s shim to answer on ${socketOf(node)}`, async () => (await client(node).runtime.Version({})).runtimeName === 'docker', {
        timeoutMs: 180_000,
        intervalMs: 500,
      });
    }
    await pushToCluster(registryPort, TEST_PAUSE_IMAGE, 'cds/pause:test');
    busyboxRef = await pushToCluster(registryPort, TEST_BUSYBOX_IMAGE, 'cds/busybox:test');
    console.log(`compose-cluster: images ${((built - started) / 1000).toFixed(1)} s, up to both sockets and images pushed ${((Date.now() - built) / 1000).toFixed(1)} s`);
  });

  after(async () => {
    for (const c of clients.values()) c.close();
    await project?.remove();
  });

  it('serves each node’s CRI socket under the cluster directory, with a ready runtime and network', async () => {
    for (const node of NODES) {
      assert.ok(fs.statSync(socketOf(node)).isSocket(), `${socketOf(node)} is a socket`);
      const { status } = await client(node).runtime.Status({});
      assert.deepEqual(
        status?.conditions.map((c) => [c.type, c.status]),
        [
          ['RuntimeReady', true],
          ['NetworkReady', true],
        ],
        node,
      );
    }
  });

  it('ships the pause program each node makes the default pause image from when no registry has it', async () => {
    for (const node of NODES) {
      const out = await project.exec(node, '/opt/cri-docker-shim/dist/pause/pause -v');
      assert.equal(out.trim(), 'cri-docker-shim pause', node);
    }
  });

  it('pulls an image from the local registry on each node', async () => {
    for (const node of NODES) {
      const { imageRef } = await client(node).images.PullImage({ image: { image: busyboxRef } });
      assert.match(imageRef, /^sha256:[0-9a-f]{64}$/);
      const { image } = await client(node).images.ImageStatus({ image: { image: busyboxRef } });
      assert.ok(image?.repoTags.includes(busyboxRef), `${node} lists ${busyboxRef}: ${image?.repoTags}`);
    }
  });

  it('runs a pod with a container on each node, addressed from the node’s own pod CIDR', async () => {
    for (const [i, node] of NODES.entries()) {
      const config = {
        metadata: { name: `web-${node}`, namespace: 'cds-cluster', uid: `${testRun}-${node}`, attempt: 0 },
        hostname: `web-${node}`,
        labels: testLabels(testRun),
        logDirectory: `/var/log/pods/cds-cluster_web-${node}`,
      };
      const { podSandboxId } = await client(node).runtime.RunPodSandbox({ config });
      const { containerId } = await client(node).runtime.CreateContainer({
        podSandboxId,
        sandboxConfig: config,
        config: { metadata: { name: 'web', attempt: 0 }, image: { image: busyboxRef }, command: ['sh', '-c', WHO_ASKS_SERVER], logPath: 'web/0.log' },
      });
      await client(node).runtime.StartContainer({ containerId });
      const { status } = await client(node).runtime.PodSandboxStatus({ podSandboxId });
      const ip = status?.network?.ip ?? '';
      assert.match(ip, new RegExp(`^10\\.244\\.${i + 1}\\.\\d+$`), `${node}'s pod address`);
      pods.set(node, { podId: podSandboxId, containerId, ip });
    }
  });

  it('lets the pods reach each other across the nodes, seen from their own addresses', async () => {
    for (const [from, to] of [
      ['node-1', 'node-2'],
      ['node-2', 'node-1'],
    ] as const) {
      const target = pods.get(to)!.ip;
      // Each node adds its route to the peer's pod CIDR within 2 s of seeing the peer: poll.
      const seen = await waitFor(
        `a pod on ${from} to reach ${target} on ${to}`,
        async () => {
          const res = await client(from).runtime.ExecSync({
            containerId: pods.get(from)!.containerId,
            // (no -T: Debian's busybox wget crashes with it; the exec's own timeout bounds the call)
            cmd: ['wget', '-q', '-O', '-', `http://${target}:8080/cgi-bin/ip`],
            timeout: 10,
          });
          return res.exitCode === 0 ? res.stdout.toString().trim() : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      // Routed, not masqueraded: the peer sees the pod's own address (IPv4-mapped, as httpd prints it).
      assert.equal(seen.replace(/^\[(::ffff:)?|\]$/g, ''), pods.get(from)!.ip);
    }
  });

  it('lets the pods reach the registry', async () => {
    for (const node of NODES) {
      const res = await client(node).runtime.ExecSync({
        containerId: pods.get(node)!.containerId,
        cmd: ['wget', '-q', '-O', '-', `http://${clusterNet}.2:5000/v2/_catalog`],
        timeout: 10,
      });
      assert.equal(res.exitCode, 0, res.stderr.toString());
      assert.match(res.stdout.toString(), /"cds\/busybox"/);
    }
  });

  it('lists a node’s pods and containers again after its shim restarts', async () => {
    const pidFile = '/run/cri-docker-shim.pid';
    const before = (await project.exec('node-1', `cat ${pidFile}`)).trim();
    await project.exec('node-1', `kill -TERM ${before}`);
    await waitFor(
      'node-1 to start its shim again',
      async () => {
        const now = (await project.exec('node-1', `cat ${pidFile}`)).trim();
        return now !== before && (await client('node-1').runtime.Version({})).runtimeName === 'docker';
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const mine = pods.get('node-1')!;
    const { items } = await client('node-1').runtime.ListPodSandbox({ filter: { labelSelector: testLabels(testRun) } });
    assert.deepEqual(
      items.map((p) => [p.id, p.state]),
      [[mine.podId, 'SANDBOX_READY']],
    );
    const { containers } = await client('node-1').runtime.ListContainers({ filter: { podSandboxId: mine.podId } });
    assert.deepEqual(
      containers.map((c) => [c.id, c.state]),
      [[mine.containerId, 'CONTAINER_RUNNING']],
    );
  });

  it('leaves nothing on the host after `docker-compose down -v`', async () => {
    assert.ok(footprint && footprint.containers.length === 3, `three containers ran: ${footprint?.containers}`);
    for (const c of clients.values()) c.close();
    clients.clear();
    await project.compose(['down', '-v', '--timeout', '20']);
    const left = await leftoversOf(footprint, project);
    const rules = execFileSync('iptables-save', [], { encoding: 'utf8' }).split('\n');
    left.push(...rules.filter((r) => r.includes(`${clusterNet}.`) || r.includes(`--dport ${registryPort} `)).map((r) => `iptables: ${r}`));
    assert.deepEqual(left, []);
    // Only the socket directories were made, all under the cluster directory.
    assert.deepEqual(fs.readdirSync(clusterDir).sort(), [...NODES]);
    await project.remove();
    assert.equal(fs.existsSync(clusterDir), false);
  });
});
