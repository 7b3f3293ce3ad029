// Makes V8's code cache for the bundle (dist/src/cli.bundle.cache), for main.js to start with.
// V8 compiles a function the first time it runs, and a cache holds only what was compiled when
// it was made; so the cache is made after a start-up like a restarted shim's: the bundle runs,
// in a child process with main.js's Node flags, against a stand-in for Docker's API on a socket
// in a temporary directory, answers the calls kubelet makes first, and writes the cache as it
// exits on SIGTERM. The stand-in answers only what start-up and those calls ask (an engine with
// no containers and no images); it is no Docker for anything else, and nothing here checks the
// answers: the tests do that against a real engine.
//   makeCodeCache({ node, bundle, cache, launcher, earlyAnswers, contract, nodeFlags }): resolves
//   once the cache is written (node: the Node that will run the bundle, the only one whose V8
//   takes the cache; launcher, earlyAnswers, contract: launcher.js, docker/early-answers.js and
//   cri/contract.js as tsc compiled them beside the bundle)
//   makeBuildCodeCache(dist, node): the same for the build in `dist` (a dist/src: main.js, the
//   bundle and what tsc compiled beside them), with main.js's shebang flags
//   node scripts/code-cache.mjs --node=PATH DIST_SRC
//                                     makes DIST_SRC's cache with that Node, then checks that a
//                                     fresh one of it takes the cache (exit 1 if not); the bench
//                                     runs a copy of the build on another Node this way
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The calls a restarted shim is asked first (kubelet's start-up and its first relist). */
const WARM_UP_CALLS = [
  ['runtime', 'Version'],
  ['runtime', 'Status'],
  ['runtime', 'RuntimeConfig'],
  ['runtime', 'ListPodSandbox'],
  ['runtime', 'ListContainers'],
  ['image', 'ListImages'],
];
const DEADLINE_MS = 30_000;

/** Docker's API as an empty engine answers it, for the requests start-up makes. */
function standInDocker(socketPath) {
  const answers = {
    '/_ping': 'OK',
    '/version': { Version: '20.10.24', ApiVersion: '1.41', MinAPIVersion: '1.12', Os: 'linux', Arch: 'amd64', KernelVersion: os.release() },
    '/info': {
      ID: 'code-cache',
      Containers: 0,
      Images: 0,
      Driver: 'overlay2',
      DockerRootDir: '/var/lib/docker',
      CgroupDriver: 'cgroupfs',
      CgroupVersion: fs.existsSync('/sys/fs/cgroup/cgroup.controllers') ? '2' : '1',
      KernelVersion: os.release(),
      OperatingSystem: 'stand-in',
      Runtimes: { runc: { path: 'runc' } },
      DefaultRuntime: 'runc',
    },
    '/containers/json': [],
    '/images/json': [],
  };
  const server = http.createServer((req, res) => {
    const route = new URL(req.url ?? '/', 'http://docker').pathname.replace(/^\/v\d+\.\d+/, '');
    if (route === '/events') {
      // Subscribed: headers now, events never; the shim closes it when it stops.
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
      return;
    }
    const answer = answers[route];
    const status = answer === undefined ? 404 : 200;
    const body = answer === undefined ? { message: `${route}: not answered by the code-cache stand-in` } : answer;
    res.writeHead(status, { 'Content-Type': typeof body === 'string' ? 'text/plain' : 'application/json', 'Api-Version': '1.41' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve(server));
  });
}

/** Resolves once `file` exists, or rejects when `failed()` says why not or the deadline passes. */
async function appeared(file, failed) {
  const deadline = Date.now() + DEADLINE_MS;
  while (!fs.existsSync(file)) {
    const reason = failed();
    if (reason) throw new Error(reason);
    if (Date.now() > deadline) throw new Error(`${file} did not appear within ${DEADLINE_MS} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export async function makeCodeCache({ node, bundle, cache, launcher, earlyAnswers, contract, nodeFlags }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-code-cache-'));
  const dockerSocket = path.join(dir, 'docker.sock');
  const criSocket = path.join(dir, 'cri.sock');
  const docker = await standInDocker(dockerSocket);
  const flags = [
    `--container-runtime-endpoint=unix://${criSocket}`,
    `--docker-endpoint=unix://${dockerSocket}`,
    `--cri-dockerd-root-directory=${path.join(dir, 'root')}`,
  ];
  // As main.js runs it (main.ts), writing the cache when the process exits.
  const child = `
    const { compileBundle } = require(${JSON.stringify(launcher)});
    const { askDockerEarly } = require(${JSON.stringify(earlyAnswers)});
    const argv = ${JSON.stringify(flags)};
    process.argv = [process.argv[0], ${JSON.stringify(bundle)}, ...argv];
    const early = askDockerEarly(argv, process.env);
    const compiled = compileBundle(${JSON.stringify(bundle)}, ${JSON.stringify(cache)});
    process.on('exit', (code) => { if (code === 0) require('node:fs').writeFileSync(${JSON.stringify(cache)}, compiled.codeCache()); });
    compiled.run().runCli(argv, early);
  `;
  fs.rmSync(cache, { force: true });
  const shim = spawn(node, [...nodeFlags, '-e', child], { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '' } });
  let stderr = '';
  shim.stderr.on('data', (d) => (stderr = (stderr + d.toString()).slice(-4000)));
  let exit;
  const exited = new Promise((resolve) => shim.on('exit', (code, signal) => resolve((exit = { code, signal }))));
  try {
    await appeared(criSocket, () => exit && `the shim exited (${exit.code ?? exit.signal}) before serving: ${stderr}`);
    const require = createRequire(contract);
    const grpc = require('@grpc/grpc-js');
    const { criContract } = require(contract);
    const v1 = criContract().runtime.v1;
    const clients = {
      runtime: new v1.RuntimeService(`unix://${criSocket}`, grpc.credentials.createInsecure()),
      image: new v1.ImageService(`unix://${criSocket}`, grpc.credentials.createInsecure()),
    };
    try {
      for (const [service, method] of WARM_UP_CALLS) {
        const deadline = new Date(Date.now() + DEADLINE_MS);
        await new Promise((resolve, reject) =>
          clients[service][method]({}, { deadline }, (err) => (err ? reject(new Error(`${method}: ${err.message}; shim: ${stderr}`)) : resolve())),
        );
      }
    } finally {
      Object.values(clients).forEach((c) => c.close());
    }
  } finally {
    if (!exit) shim.kill('SIGTERM');
    await exited;
    docker.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (exit.code !== 0 || !fs.existsSync(cache)) throw new Error(`the shim exited with ${exit.code ?? exit.signal} and no code cache: ${stderr}`);
}

/** The Node flags in main.js's shebang (`#!/usr/bin/env -S [VAR=value ...] node [flags]`): V8 takes a cache only under the flags it was made with. */
export function shebangNodeFlags(mainJs) {
  const shebang = fs.readFileSync(mainJs, 'utf8').split('\n', 1)[0];
  return shebang.replace(/^#!\/usr\/bin\/env -S (?:[A-Z_]+=\S*\s+)*node\s*/, '').split(/\s+/).filter((f) => f !== '');
}

/** The files of the build in `dist` (dist/src) that the cache is made from and for. */
function buildFiles(dist) {
  return {
    mainJs: path.join(dist, 'main.js'),
    bundle: path.join(dist, 'cli.bundle.js'),
    cache: path.join(dist, 'cli.bundle.cache'),
    launcher: path.join(dist, 'launcher.js'),
    earlyAnswers: path.join(dist, 'docker', 'early-answers.js'),
    contract: path.join(dist, 'cri', 'contract.js'),
  };
}

/** Makes the cache of the build in `dist` with `node`, under main.js's shebang flags; gives the cache's path. */
export async function makeBuildCodeCache(dist, node) {
  const { mainJs, ...files } = buildFiles(dist);
  await makeCodeCache({ node, ...files, nodeFlags: shebangNodeFlags(mainJs) });
  return files.cache;
}

/** Whether a fresh `node`, run with main.js's flags, takes the cache of the build in `dist` (within one process V8 would not look at it). */
export function codeCacheTaken(dist, node) {
  const { mainJs, launcher, bundle, cache } = buildFiles(dist);
  const check = `process.stdout.write(String(require(${JSON.stringify(launcher)}).compileBundle(${JSON.stringify(bundle)}, ${JSON.stringify(cache)}).cacheRejected))`;
  const res = spawnSync(node, [...shebangNodeFlags(mainJs), '-e', check], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  if (res.status !== 0) throw new Error(`${node} could not load the bundle: ${res.stderr}`);
  return res.stdout === 'false';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const node = process.argv.find((a) => a.startsWith('--node='))?.slice('--node='.length) ?? process.execPath;
  const dist = process.argv.slice(2).find((a) => !a.startsWith('--'));
  try {
    if (dist === undefined) throw new Error('usage: node scripts/code-cache.mjs [--node=PATH] DIST_SRC');
    const cache = await makeBuildCodeCache(path.resolve(dist), node);
    if (!codeCacheTaken(path.resolve(dist), node)) throw new Error(`${node} refuses the cache it made (${cache})`);
    process.stdout.write(`code cache: ${cache} (${(fs.statSync(cache).size / 1024 / 1024).toFixed(1)} MiB), made and taken by ${node}\n`);
  } catch (err) {
    process.stderr.write(`code-cache: ${err.message}\n`);
    process.exitCode = 1;
  }
}
