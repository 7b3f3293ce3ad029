// docker-compose.yml as docker-compose reads it, without running anything: the default cluster,
// the sizes scripts/cluster-nodes.sh sets, and the `host` profile. Run on a copy of the file and
// the script in a temp directory, so the checkout's own override is never touched.
import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { composeUnavailable, REPO_ROOT } from '../support/compose';
import { tempDir } from '../support/temp';

const run = promisify(execFile);

interface Service {
  hostname?: string;
  networks?: { cluster?: { ipv4_address?: string; aliases?: string[] } };
  /** 1.29 prints "source:target:mode", Compose v2 objects. */
  volumes?: Array<string | { source?: string; target: string }>;
  privileged?: boolean;
  network_mode?: string;
  pid?: string;
  profiles?: string[];
}

describe('docker-compose.yml and cluster-nodes.sh', { skip: composeUnavailable() }, () => {
  const dir = tempDir('compose-config');
  fs.mkdirSync(path.join(dir, 'scripts'));
  fs.copyFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), path.join(dir, 'docker-compose.yml'));
  fs.copyFileSync(path.join(REPO_ROOT, 'scripts/cluster-nodes.sh'), path.join(dir, 'scripts/cluster-nodes.sh'));
  fs.chmodSync(path.join(dir, 'scripts/cluster-nodes.sh'), 0o755);
  const override = path.join(dir, 'docker-compose.override.yml');
  const env = { ...process.env, COMPOSE_PROJECT_NAME: 'cdsconfig', CLUSTER_NET: '10.250.3' };
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const config = async (...args: string[]): Promise<Record<string, Service>> => {
    const { stdout } = await run('docker-compose', [...args, 'config'], { cwd: dir, env });
    return (parse(stdout) as { services: Record<string, Service> }).services;
  };
  /** What `up` starts without a --profile (`config` lists every service, profiles or not). */
  const byDefault = (services: Record<string, Service>) =>
    Object.keys(services)
      .filter((name) => !services[name]!.profiles?.length)
      .sort();
  const nodes = (n: number) => ['registry', ...Array.from({ length: n }, (_, i) => `node-${i + 1}`)].sort();
  const mounts = (s: Service) =>
    (s.volumes ?? []).map((v) => {
      if (typeof v !== 'string') return v;
      const [source, target] = v.includes(':') ? v.split(':') : [undefined, v];
      return { source, target: target! };
    });
  const socketDir = (s: Service) => mounts(s).find((v) => v.target === '/run/cri-docker-shim')?.source;

  it('gives two nodes and a registry by default, each node with its address and socket directory', async () => {
    const services = await config();
    assert.deepEqual(byDefault(services), nodes(2));
    for (const i of [1, 2]) {
      const node = services[`node-${i}`]!;
      assert.equal(node.hostname, `node-${i}`);
      assert.equal(node.privileged, true);
      assert.equal(node.networks?.cluster?.ipv4_address, `10.250.3.${10 + i}`);
      assert.deepEqual(node.networks?.cluster?.aliases, ['cluster-node']);
      assert.equal(socketDir(node), path.join(dir, '.cluster', `node-${i}`));
    }
    assert.equal(services.registry!.networks?.cluster?.ipv4_address, '10.250.3.2');
  });

  it('runs the host shim only with the host profile, in the host’s namespaces', async () => {
    const services = await config();
    assert.deepEqual(services.shim!.profiles, ['host']);
    assert.equal(services.shim!.network_mode, 'host');
    assert.equal(services.shim!.pid, 'host');
  });

  it('adds nodes 3..N with cluster-nodes.sh N, and goes back to two with N=2', async () => {
    await run(path.join(dir, 'scripts/cluster-nodes.sh'), ['4'], { env });
    const services = await config();
    assert.deepEqual(byDefault(services), nodes(4));
    for (const i of [3, 4]) {
      const node = services[`node-${i}`]!;
      assert.equal(node.hostname, `node-${i}`);
      assert.equal(node.privileged, true, 'like node-1');
      assert.equal(node.networks?.cluster?.ipv4_address, `10.250.3.${10 + i}`);
      assert.equal(socketDir(node), path.join(dir, '.cluster', `node-${i}`));
      assert.equal(mounts(node).filter((v) => v.target === '/run/cri-docker-shim').length, 1, 'one socket directory');
    }
    await run(path.join(dir, 'scripts/cluster-nodes.sh'), ['2'], { env });
    assert.equal(fs.existsSync(override), false);
    assert.deepEqual(byDefault(await config()), nodes(2));
  });

  it('leaves an override of the user’s own alone, and refuses a bad N', async () => {
    fs.writeFileSync(override, 'services: {}\n');
    await assert.rejects(run(path.join(dir, 'scripts/cluster-nodes.sh'), ['3'], { env }), /is not this script's/);
    assert.equal(fs.readFileSync(override, 'utf8'), 'services: {}\n');
    fs.rmSync(override);
    await assert.rejects(run(path.join(dir, 'scripts/cluster-nodes.sh'), ['1'], { env }), /N must be 2\.\.240/);
  });
});
