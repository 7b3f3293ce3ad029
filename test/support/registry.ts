// A private registry for image tests: Debian's docker-registry (distribution 2.x) on
// 127.0.0.1 with htpasswd authentication, in a temp dir, on a free port. Docker allows plain
// http to loopback registries, so pushes and pulls need no TLS. Also: pushing a local image
// into it, and a stalling proxy in front of it (for the pull progress deadline).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { dockerApi } from './images';
import { waitFor } from './poll';

export interface TestRegistry {
  /** "127.0.0.1:<port>" */
  readonly host: string;
  readonly username: string;
  readonly password: string;
  /** Tags a local image as host/<name>, pushes it with auth, removes the local tag; returns the pushed ref. */
  push(localImage: string, name: string): Promise<PushedImage>;
  stop(): Promise<void>;
}

export interface PushedImage {
  /** host/name:tag */
  readonly ref: string;
  /** host/name@sha256:... (the manifest digest the registry stores) */
  readonly digestRef: string;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

function httpStatus(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.setTimeout(2000, () => req.destroy(new Error('timeout')));
  });
}

export async function startRegistry(): Promise<TestRegistry> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-registry-'));
  const username = 'tester';
  const password = `pw-${randomBytes(6).toString('hex')}`;
  execFileSync('htpasswd', ['-Bbc', path.join(dir, 'htpasswd'), username, password], { stdio: 'ignore' });
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  fs.writeFileSync(
    path.join(dir, 'config.yml'),
    [
      'version: 0.1',
      'log:',
      '  level: error',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${path.join(dir, 'data')}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: ${host}`,
      'auth:',
      '  htpasswd:',
      '    realm: cds-test',
      `    path: ${path.join(dir, 'htpasswd')}`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn('/usr/bin/docker-registry', ['serve', path.join(dir, 'config.yml')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  let exited = false;
  const exit = new Promise<void>((resolve) => child.on('exit', () => ((exited = true), resolve())));
  try {
    await waitFor('the test registry to answer', async () => {
      if (exited) throw new Error(`docker-registry exited: ${output}`);
      return (await httpStatus(`http://${host}/v2/`)) === 401;
    });
  } catch (err) {
    child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  const docker = dockerApi();
  return {
    host,
    username,
    password,
    async push(localImage, name) {
      const [repo, tag] = [`${host}/${name.split(':')[0]}`, name.split(':')[1] ?? 'latest'];
      const ref = `${repo}:${tag}`;
      await docker.getImage(localImage).tag({ repo, tag });
      try {
        const stream = await docker.getImage(ref).push({ authconfig: { username, password, serveraddress: host } });
        const out = await new Promise<Array<{ error?: string; status?: string; aux?: { Digest?: string } }>>((resolve, reject) =>
          docker.modem.followProgress(stream, (err: Error | null, res: Array<{ error?: string; status?: string; aux?: { Digest?: string } }>) =>
            err ? reject(err) : resolve(res),
          ),
        );
        const failed = out.find((m) => m.error);
        if (failed) throw new Error(`push ${ref}: ${failed.error}`);
        // A graph driver's push ends with an aux message; the containerd store's only says it:
        // "<tag>: digest: sha256:<hex> size: <n>".
        const digest = out.find((m) => m.aux?.Digest)?.aux?.Digest ?? out.map((m) => /: digest: (sha256:[a-f0-9]{64}) /.exec(m.status ?? '')?.[1]).find((d) => d !== undefined);
        if (!digest) throw new Error(`push ${ref}: no digest reported`);
        return { ref, digestRef: `${repo}@${digest}` };
      } finally {
        await docker.getImage(ref).remove({ noprune: true }).catch(() => undefined);
      }
    },
    async stop() {
      if (!exited) child.kill('SIGTERM');
      await exit;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * An HTTP proxy on 127.0.0.1 in front of `target` that answers everything except blob
 * downloads, which it holds open without a byte: a pull then stops making progress.
 */
export async function startStallingProxy(target: string): Promise<{ host: string; stop(): Promise<void> }> {
  const held = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    if (/\/blobs\/sha256:/.test(req.url ?? '') && req.method === 'GET') {
      held.add(res);
      res.on('close', () => held.delete(res));
      return;
    }
    const upstream = http.request(
      { host: target.split(':')[0], port: Number(target.split(':')[1]), path: req.url, method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    host,
    async stop() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Imports an image no one else has (a file of random content, and `smallFiles` tiny files in
 * /small), tagged `ref`; `changes` are Dockerfile lines (USER ...).
 */
export async function importUniqueImage(ref: string, changes: string[] = [], randomBytesCount = 64 * 1024, smallFiles = 0): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-unique-'));
  try {
    fs.writeFileSync(path.join(dir, 'random.bin'), randomBytes(randomBytesCount));
    if (smallFiles > 0) fs.mkdirSync(path.join(dir, 'small'));
    for (let i = 0; i < smallFiles; i++) fs.writeFileSync(path.join(dir, 'small', String(i)), String(i));
    const [repo, tag] = [ref.slice(0, ref.lastIndexOf(':')), ref.slice(ref.lastIndexOf(':') + 1)];
    const tar = spawn('tar', ['-C', dir, '--numeric-owner', '-cf', '-', '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const docker = dockerApi();
    const stream = (await docker.importImage(tar.stdout as unknown as string, { repo, tag, changes } as object)) as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(stream, (err: Error | null, out: Array<{ error?: string }>) => {
        const failed = out?.find((m) => m.error);
        if (err || failed) reject(err ?? new Error(failed!.error));
        else resolve();
      }),
    );
    return (await docker.getImage(ref).inspect()).Id;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** One request to a test registry with its login; the answer's body, status and headers. */
async function registryRequest(
  registry: TestRegistry,
  method: string,
  pathAndQuery: string,
  body?: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Buffer; headers: http.IncomingHttpHeaders }> {
  const auth = Buffer.from(`${registry.username}:${registry.password}`).toString('base64');
  return new Promise((resolve, reject) => {
    const req = http.request(`http://${registry.host}${pathAndQuery}`, { method, headers: { authorization: `Basic ${auth}`, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
const DOCKER_MANIFEST_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json';
const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';

/**
 * Makes `name:tag` in the registry a multi-platform index (a Docker manifest list, or an OCI
 * index when the image was pushed as an OCI manifest, as the containerd store does) of the image
 * pushed as `name:from` (linux/amd64, this host's) and an arm64 twin of it (its config with
 * another architecture, the same layers); returns the index's reference.
 */
export async function pushTwoPlatformIndex(registry: TestRegistry, name: string, from: string, tag: string): Promise<PushedImage> {
  const ok = (r: { status: number; body: Buffer }, what: string): void => {
    if (r.status < 200 || r.status >= 300) throw new Error(`${what}: HTTP ${r.status}: ${r.body.toString()}`);
  };
  const sha = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;
  const got = await registryRequest(registry, 'GET', `/v2/${name}/manifests/${from}`, undefined, { accept: `${DOCKER_MANIFEST}, ${OCI_MANIFEST}` });
  ok(got, 'get the manifest');
  const manifestType = got.headers['content-type'] === OCI_MANIFEST ? OCI_MANIFEST : DOCKER_MANIFEST;
  const indexType = manifestType === OCI_MANIFEST ? OCI_INDEX : DOCKER_MANIFEST_LIST;
  const manifest = JSON.parse(got.body.toString()) as { config: { digest: string; size: number; mediaType: string } };
  const config = await registryRequest(registry, 'GET', `/v2/${name}/blobs/${manifest.config.digest}`);
  ok(config, 'get the config');
  const armConfig = Buffer.from(JSON.stringify({ ...(JSON.parse(config.body.toString()) as object), architecture: 'arm64' }));
  const upload = await registryRequest(registry, 'POST', `/v2/${name}/blobs/uploads/`);
  ok(upload, 'start an upload');
  const location = new URL(String(upload.headers.location), `http://${registry.host}`);
  location.searchParams.set('digest', sha(armConfig));
  ok(await registryRequest(registry, 'PUT', `${location.pathname}${location.search}`, armConfig, { 'content-type': 'application/octet-stream' }), 'upload the arm64 config');
  const armManifest = Buffer.from(JSON.stringify({ ...manifest, config: { ...manifest.config, digest: sha(armConfig), size: armConfig.length } }));
  ok(await registryRequest(registry, 'PUT', `/v2/${name}/manifests/${sha(armManifest)}`, armManifest, { 'content-type': manifestType }), 'put the arm64 manifest');
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: indexType,
      manifests: [
        { mediaType: manifestType, digest: sha(got.body), size: got.body.length, platform: { architecture: 'amd64', os: 'linux' } },
        { mediaType: manifestType, digest: sha(armManifest), size: armManifest.length, platform: { architecture: 'arm64', os: 'linux' } },
      ],
    }),
  );
  ok(await registryRequest(registry, 'PUT', `/v2/${name}/manifests/${tag}`, index, { 'content-type': indexType }), 'put the index');
  return { ref: `${registry.host}/${name}:${tag}`, digestRef: `${registry.host}/${name}@${sha(index)}` };
}
