// A node as cri-dockerd (Mirantis) leaves it, made without cri-dockerd: for each pod a pause
// container and an app container with cri-dockerd's Docker names and labels (kubelet's CRI
// labels, annotations as "annotation." labels, its own type, sandbox ID and log path labels),
// the app joining the pause's network and IPC; the pod network set up by running the real CNI
// plugins as libcni does for cri-dockerd (its loopback list at cniVersion 0.2.0, then the
// test's conflist, both with interface eth0 and cri-dockerd's CNI_ARGS and capability
// arguments) and their results cached in libcni's format; the app's log through Docker's
// json-file with kubelet's log path a symlink to it; and cri-dockerd's sandbox checkpoint
// (written by the shim's encoder, whose bytes and checksums
// test/unit/checkpoint/cri-dockerd-format.test.ts checks against go-spew's). The facts come from cri-dockerd's and libcni's sources (libcni
// 1.1.2, which cri-dockerd vendors); none of their code is here.
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { encodeCriDockerdCheckpoint } from '../../src/checkpoint/cri-dockerd-format';
import type { PodSandboxConfig, PortMapping } from '../../src/cri/types';
import { CNI_BIN_DIR, type TestNetwork } from './cni-network';
import type { Fixture } from './fixture';
import { dockerApi, TEST_BUSYBOX_IMAGE, TEST_PAUSE_IMAGE } from './images';

/** cri-dockerd's loopback network list, byte for byte as its source holds it (libcni caches these bytes). */
const CRI_DOCKERD_LOOPBACK = `{
  "cniVersion": "0.2.0",
  "name": "cni-loopback",
  "plugins":[{
    "type": "loopback"
  }]
}`;

/** cri-dockerd runs every attachment, loopback included, with kubelet's default interface name. */
const IFNAME = 'eth0';
const NAMESPACE = 'cri-dockerd-node';

export interface CriDockerdPodSpec {
  name: string;
  /** The app's command (busybox). */
  command: string[];
  /** One host port, as kubelet gives it in the pod's port mappings. */
  hostPort?: { containerPort: number; hostPort: number; hostIp: string };
}

export interface CriDockerdPod {
  /** The pause container's ID: the sandbox ID. */
  readonly id: string;
  /** The app container's ID. */
  readonly app: string;
  readonly appName: string;
  /** The sandbox config kubelet sends again with each CreateContainer. */
  readonly config: PodSandboxConfig;
  /** kubelet's log path of the app: a symlink to Docker's json-file log. */
  readonly logPath: string;
  /** The address the bridge's IPAM gave the pod. */
  readonly ip: string;
  /** libcni's cache files of the pod, under <cache dir>/results. */
  readonly cacheFiles: readonly string[];
  /** The iptables chains the plugins made for this pod alone (bridge masquerade, portmap DNAT). */
  readonly chains: readonly string[];
}

export interface CriDockerdNode {
  /** cri-dockerd's root directory (its checkpoints under sandbox/). */
  readonly rootDir: string;
  readonly checkpointDir: string;
  readonly pods: readonly CriDockerdPod[];
}

interface PluginRun {
  command: 'ADD' | 'DEL';
  containerId: string;
  netns: string;
  args: Array<[string, string]>;
  /** The plugin's config as libcni sends it (name, cniVersion, prevResult and runtimeConfig injected). */
  conf: Record<string, unknown>;
}

/** Runs one CNI plugin binary as libcni does; its stdout parsed (ADD) or undefined (DEL). */
function runPlugin(run: PluginRun): Promise<Record<string, unknown> | undefined> {
  const type = String(run.conf.type);
  const child = spawn(path.join(CNI_BIN_DIR, type), [], {
    env: {
      PATH: process.env.PATH,
      CNI_COMMAND: run.command,
      CNI_CONTAINERID: run.containerId,
      CNI_NETNS: run.netns,
      CNI_IFNAME: IFNAME,
      CNI_ARGS: run.args.map(([k, v]) => `${k}=${v}`).join(';'),
      CNI_PATH: CNI_BIN_DIR,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  child.stdin.end(JSON.stringify(run.conf));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) reject(new Error(`CNI ${run.command} of ${type} exited ${code}: ${out}${err}`));
      else resolve(run.command === 'ADD' ? (JSON.parse(out) as Record<string, unknown>) : undefined);
    });
  });
}

/**
 * libcni's AddNetworkList: each plugin in turn with the list's name and version, the previous
 * plugin's result, and the capability arguments it declares; the last result is the list's.
 */
async function addNetworkList(listBytes: string, containerId: string, netns: string, args: Array<[string, string]>, capabilityArgs: Record<string, unknown>): Promise<Record<string, unknown>> {
  const list = JSON.parse(listBytes) as { name: string; cniVersion: string; plugins: Array<Record<string, unknown>> };
  let prevResult: Record<string, unknown> | undefined;
  for (const plugin of list.plugins) {
    const conf: Record<string, unknown> = { ...plugin, name: list.name, cniVersion: list.cniVersion };
    if (prevResult) conf.prevResult = prevResult;
    const declared = Object.entries((plugin.capabilities ?? {}) as Record<string, boolean>).filter(([k, on]) => on && k in capabilityArgs);
    if (declared.length > 0) conf.runtimeConfig = Object.fromEntries(declared.map(([k]) => [k, capabilityArgs[k]]));
    prevResult = asLibcniKeepsIt((await runPlugin({ command: 'ADD', containerId, netns, args, conf }))!);
  }
  return prevResult!;
}

/**
 * A plugin's output as libcni keeps it: decoded into the Result type of the version it names
 * (unknown fields dropped; dns always there) and encoded again. Debian's loopback answers a
 * 0.2.0 config with 1.0.0-style `ips`, so libcni caches its result as `{cniVersion, dns}`.
 */
function asLibcniKeepsIt(output: Record<string, unknown>): Record<string, unknown> {
  const version = typeof output.cniVersion === 'string' && output.cniVersion !== '' ? output.cniVersion : '0.1.0';
  const fields = ['0.1.0', '0.2.0'].includes(version) ? ['ip4', 'ip6'] : ['interfaces', 'ips', 'routes'];
  const kept: Record<string, unknown> = { cniVersion: version };
  for (const field of fields) {
    const v = output[field];
    if (v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0)) kept[field] = v;
  }
  kept.dns = output.dns ?? {};
  return kept;
}

/** libcni's cache entry (its cachedInfo, fields in its order; empty cniArgs and capabilityArgs left out). */
function writeCacheEntry(cacheDir: string, networkName: string, containerId: string, listBytes: string, args: Array<[string, string]>, capabilityArgs: Record<string, unknown>, result: unknown): string {
  const file = `${networkName}-${containerId}-${IFNAME}`;
  const dir = path.join(cacheDir, 'results');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const doc = {
    kind: 'cniCacheV1',
    containerId,
    config: Buffer.from(listBytes).toString('base64'),
    ifName: IFNAME,
    networkName,
    cniArgs: args,
    capabilityArgs,
    result,
  };
  fs.writeFileSync(path.join(dir, file), JSON.stringify(doc), { mode: 0o600 });
  return file;
}

/** The per-pod chains among iptables rules that name the container (bridge and portmap comment theirs with its ID). */
function chainsNaming(containerId: string): string[] {
  const chains = new Set<string>();
  for (const save of ['iptables-save', 'ip6tables-save']) {
    const text = execFileSync(save, [], { encoding: 'utf8' });
    for (const line of text.split('\n').filter((l) => l.includes(containerId))) {
      for (const m of line.matchAll(/(?:-A|-j) (CNI-\S+)/g)) if (!m[1]!.startsWith('CNI-HOSTPORT-')) chains.add(m[1]!);
    }
  }
  return [...chains].sort();
}

/**
 * Makes the pods on `net` as cri-dockerd would have, in a root directory and pod log
 * directories of the fixture's (removed with it). Every container is labelled with the
 * fixture's run (swept with it); the network's own removal (the caller's) takes whatever the
 * plugins made if the pods are never torn down.
 */
export async function makeCriDockerdNode(f: Fixture, net: TestNetwork, specs: readonly CriDockerdPodSpec[]): Promise<CriDockerdNode> {
  const docker = dockerApi();
  const rootDir = f.tempDir('cri-dockerd-root');
  const checkpointDir = path.join(rootDir, 'sandbox');
  fs.mkdirSync(checkpointDir, { recursive: true, mode: 0o700 });
  const listBytes = fs.readFileSync(path.join(net.confDir, fs.readdirSync(net.confDir).find((n) => n.endsWith('.conflist'))!), 'utf8');
  const pods: CriDockerdPod[] = [];
  for (const spec of specs) {
    const uid = `${f.run}-${spec.name}`;
    const name = `${spec.name}-${f.run}`;
    const logDir = f.tempDir(`pods-${NAMESPACE}_${name}`);
    const mappings = spec.hostPort ? [spec.hostPort] : [];
    const portMappings: PortMapping[] = mappings.map((m) => ({ protocol: 'TCP', ...m }));
    const podLabels = f.labels({ 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': NAMESPACE, 'io.kubernetes.pod.uid': uid, app: spec.name });
    const podAnnotations = { 'kubernetes.io/config.source': 'api' };
    const config: PodSandboxConfig = {
      metadata: { name, namespace: NAMESPACE, uid, attempt: 0 },
      hostname: name,
      logDirectory: logDir,
      labels: podLabels,
      annotations: podAnnotations,
      portMappings,
    };
    const annotationLabels = (a: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(a).map(([k, v]) => [`annotation.${k}`, v]));

    // The pause container: network mode none (CNI sets its namespace up), a shareable IPC.
    const pause = await docker.createContainer({
      name: `k8s_POD_${name}_${NAMESPACE}_${uid}_0`,
      Image: TEST_PAUSE_IMAGE,
      Hostname: name,
      Labels: { ...podLabels, ...annotationLabels(podAnnotations), 'io.kubernetes.docker.type': 'podsandbox', 'io.kubernetes.container.name': 'POD' },
      HostConfig: { NetworkMode: 'none', IpcMode: 'shareable', OomScoreAdj: -998 },
    });
    const id = pause.id;
    fs.writeFileSync(
      path.join(checkpointDir, id),
      encodeCriDockerdCheckpoint({ name, namespace: NAMESPACE, hostNetwork: false, portMappings: mappings.map((m) => ({ protocol: 'TCP', ...m })) }),
    );
    await pause.start();
    const pid = (await pause.inspect()).State.Pid;
    const netns = `/proc/${pid}/ns/net`;

    // CNI as cri-dockerd drives libcni: loopback, then the pod network, same runtime config.
    const args: Array<[string, string]> = [['IgnoreUnknown', '1'], ['K8S_POD_NAMESPACE', NAMESPACE], ['K8S_POD_NAME', name], ['K8S_POD_INFRA_CONTAINER_ID', id]];
    const capabilityArgs = {
      portMappings: mappings.filter((m) => m.hostPort > 0).map((m) => ({ hostPort: m.hostPort, containerPort: m.containerPort, protocol: 'tcp', hostIP: m.hostIp })),
      ipRanges: [[{ subnet: '' }]],
    };
    const loResult = await addNetworkList(CRI_DOCKERD_LOOPBACK, id, netns, args, capabilityArgs);
    const cacheFiles = [writeCacheEntry(net.cacheDir, 'cni-loopback', id, CRI_DOCKERD_LOOPBACK, args, capabilityArgs, loResult)];
    const result = await addNetworkList(listBytes, id, netns, args, capabilityArgs);
    cacheFiles.push(writeCacheEntry(net.cacheDir, net.name, id, listBytes, args, capabilityArgs, result));
    const ips = result.ips as Array<{ address: string }>;
    const ip = ips[0]!.address.split('/')[0]!;

    // The app: joins the pause's network and IPC; logs through json-file, linked where kubelet reads.
    const appName = 'app';
    const logPath = path.join(logDir, appName, '0.log');
    const containerAnnotations = { 'io.kubernetes.container.restartCount': '0', 'io.kubernetes.container.terminationMessagePath': '/dev/termination-log' };
    const app = await docker.createContainer({
      name: `k8s_${appName}_${name}_${NAMESPACE}_${uid}_0`,
      Image: TEST_BUSYBOX_IMAGE,
      Entrypoint: spec.command,
      Labels: {
        ...f.labels({ 'io.kubernetes.container.name': appName, 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': NAMESPACE, 'io.kubernetes.pod.uid': uid }),
        ...annotationLabels(containerAnnotations),
        'io.kubernetes.docker.type': 'container',
        'io.kubernetes.container.logpath': logPath,
        'io.kubernetes.sandbox.id': id,
      },
      Healthcheck: { Test: ['NONE'] },
      HostConfig: { NetworkMode: `container:${id}`, IpcMode: `container:${id}`, RestartPolicy: { Name: 'no' }, LogConfig: { Type: 'json-file', Config: {} } },
    });
    await app.start();
    const dockerLog = (await app.inspect()).LogPath;
    fs.mkdirSync(path.dirname(logPath), { recursive: true });
    fs.symlinkSync(dockerLog, logPath);
    pods.push({ id, app: app.id, appName, config, logPath, ip, cacheFiles, chains: chainsNaming(id) });
  }
  return { rootDir, checkpointDir, pods };
}
