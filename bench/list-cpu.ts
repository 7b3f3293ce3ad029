// The shim's own CPU per list call at scale, in-process and without Docker: the fake Docker of
// test/support/fake-docker.ts holds N pods (a pause container and one app container each, with
// the names and labels the shim gives them), the real state cache follows it, and the real
// handlers answer through the caching client as in the shim. Each call's CPU (process.cpuUsage,
// user + system) includes encoding the answer as gRPC would; the calls run back to back.
//   node dist/bench/list-cpu.js [--pods=500] [--calls=100] [--cgroups] [--dump=FILE] [--only=TEXT]
// --cgroups: the containers' PID is this process's, so the stats calls read real cgroup files
// (all the same ones); without it they have none and the stats are the list part alone.
// --dump: writes the list answers as JSON, to compare two builds' answers. --only: the calls
// whose label holds TEXT (to profile one under --cpu-prof).
import { createHash } from 'node:crypto';
import { CHECKPOINT_VERSION, type SandboxCheckpoint } from '../src/checkpoint/checkpoint';
import * as fs from 'node:fs';
import { criContract } from '../src/cri/contract';
import type { CallContext, RuntimeServiceImpl } from '../src/cri/types';
import { CachingDockerClient } from '../src/docker-cache/caching-client';
import { ShimObjectStore } from '../src/object-store/object-store';
import { DockerStateCache } from '../src/docker-cache/state-cache';
import type { ContainerInspect } from '../src/docker/types';
import { CONTAINER_TYPE_LABEL, SANDBOX_ID_LABEL, TYPE_CONTAINER, TYPE_SANDBOX, toDockerLabels } from '../src/conventions/labels';
import { containerDockerName, sandboxDockerName } from '../src/conventions/naming';
import { CgroupReader } from '../src/cgroups/reader';
import { PodMetricsCollector } from '../src/pod-metrics/metrics-collector';
import type { ShimContext } from '../src/shim/context';
import { runtimeService } from '../src/shim/runtime-service';
import { StatsCollector } from '../src/stats/stats-collector';
import { silentLogger } from '../src/util/logger';
import { fakeShimContext } from '../test/support/fake-context';
import { FakeDocker } from '../test/support/fake-docker';
import { inspectDoc, runningState } from '../test/support/fixtures/docker-container';
import { summarize } from './stats';

const APP_IMAGE = 'registry.test/app:1.0';

function option(argv: readonly string[], name: string): string | undefined {
  return argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

function idOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A pod as kubelet makes one: the pause container, then one app container, both running; and its checkpoint. */
function podOf(i: number, pid: number, pauseImageId: string, appImageId: string): { docs: ContainerInspect[]; checkpoint: SandboxCheckpoint } {
  const pod = { name: `app-${i}`, namespace: `ns-${i % 7}`, uid: idOf(`uid ${i}`).slice(0, 32) };
  const sandboxId = idOf(`sandbox ${i}`);
  const created = new Date(Date.UTC(2026, 10, 20, 0, 0, i)).toISOString();
  const podLabels = { app: `app-${i}`, 'io.kubernetes.pod.name': pod.name, 'io.kubernetes.pod.namespace': pod.namespace, 'io.kubernetes.pod.uid': pod.uid };
  const pause = inspectDoc({
    Id: sandboxId,
    Name: `/${sandboxDockerName({ ...pod, attempt: 0 })}`,
    Created: created,
    Image: pauseImageId,
    State: runningState(created, { Pid: pid }),
    Config: {
      Image: 'registry.test/pause:3.10',
      Labels: toDockerLabels(podLabels, { 'kubernetes.io/config.seen': created, 'kubernetes.io/config.source': 'api' }, { [CONTAINER_TYPE_LABEL]: TYPE_SANDBOX }, sandboxDockerName({ ...pod, attempt: 0 })),
    },
    HostConfig: { NetworkMode: 'none', CgroupParent: `/kubepods/pod${pod.uid}` },
  });
  const app = inspectDoc({
    Id: idOf(`container ${i}`),
    Name: `/${containerDockerName('app', 0, pod)}`,
    Created: created,
    Image: appImageId,
    State: runningState(created, { Pid: pid }),
    Config: {
      Image: APP_IMAGE,
      Labels: toDockerLabels(
        { 'io.kubernetes.container.name': 'app', ...podLabels },
        {
          'io.kubernetes.container.hash': '8c2a4f1e',
          'io.kubernetes.container.restartCount': '0',
          'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
          'io.kubernetes.container.terminationMessagePolicy': 'File',
          'io.kubernetes.pod.terminationGracePeriod': '30',
        },
        { [CONTAINER_TYPE_LABEL]: TYPE_CONTAINER, [SANDBOX_ID_LABEL]: sandboxId, 'io.kubernetes.container.logpath': `/var/log/pods/${pod.namespace}_${pod.name}_${pod.uid}/app/0.log` },
        containerDockerName('app', 0, pod),
      ),
    },
    HostConfig: { NetworkMode: `container:${sandboxId}`, CgroupParent: `/kubepods/pod${pod.uid}` },
  });
  const checkpoint: SandboxCheckpoint = {
    version: CHECKPOINT_VERSION,
    id: sandboxId,
    ...pod,
    attempt: 0,
    createdAt: `${Date.parse(created)}000123`,
    runtimeHandler: '',
    hostNetwork: false,
    portMappings: [],
    labels: podLabels,
    annotations: { 'kubernetes.io/config.seen': created, 'kubernetes.io/config.source': 'api' },
  };
  return { docs: [pause, app], checkpoint };
}

interface Measured {
  call: string;
  items: number;
  cpuMsPerCall: number;
  wallP50Ms: number;
}

async function main(argv: readonly string[]): Promise<void> {
  const pods = Number(option(argv, 'pods') ?? 500);
  const calls = Number(option(argv, 'calls') ?? 100);
  const only = option(argv, 'only');
  const cgroups = argv.includes('--cgroups');
  const dump = option(argv, 'dump');

  const docker = new FakeDocker();
  const pauseImage = docker.addImage('registry.test/pause:3.10', { Id: `sha256:${idOf('pause')}` });
  const appImage = docker.addImage(APP_IMAGE, { Id: `sha256:${idOf('app')}` });
  const made = Array.from({ length: pods }, (_, i) => podOf(i, cgroups ? process.pid : 0, pauseImage.Id, appImage.Id));
  for (const { docs } of made) for (const doc of docs) docker.containers.set(doc.Id, doc);

  const log = silentLogger();
  const cache = new DockerStateCache(docker, log);
  await cache.start();
  if (!cache.synced) throw new Error('the state cache did not sync with the fake Docker');
  const caching = new CachingDockerClient(docker, cache);
  const fake = await fakeShimContext({ docker });
  for (const { checkpoint } of made) await fake.shim.checkpoints.write(checkpoint);
  const cgroupSetup = { driver: 'cgroupfs', version: fs.existsSync('/sys/fs/cgroup/cgroup.controllers') ? 2 : 1 } as const;
  const cgroupReader = new CgroupReader({ driver: cgroupSetup.driver, log });
  const shim: ShimContext = {
    ...fake.shim,
    dockerCached: caching,
    objects: new ShimObjectStore(docker, cache),
    oomKills: cache.containers,
    cgroups: cgroupSetup,
    stats: new StatsCollector({ docker: caching, cgroupReader, storage: fake.shim.storage }),
    podMetrics: new PodMetricsCollector({ cgroupReader }, fake.shim.storage),
  };
  const service = runtimeService(shim) as Required<RuntimeServiceImpl>;
  const methods = criContract().runtime.v1.RuntimeService.service;

  type Listed = 'ListPodSandbox' | 'ListContainers' | 'ListContainerStats' | 'ListPodSandboxStats' | 'ListPodSandboxMetrics';
  const cases: Array<{ label: string; method: Listed; request: object }> = [
    { label: 'ListPodSandbox{}', method: 'ListPodSandbox', request: {} },
    { label: 'ListPodSandbox{state READY}', method: 'ListPodSandbox', request: { filter: { state: { state: 'SANDBOX_READY' } } } },
    { label: 'ListContainers{}', method: 'ListContainers', request: {} },
    { label: 'ListContainers{state RUNNING}', method: 'ListContainers', request: { filter: { state: { state: 'CONTAINER_RUNNING' } } } },
    { label: 'ListContainers{pod_sandbox_id}', method: 'ListContainers', request: { filter: { podSandboxId: idOf('sandbox 7') } } },
    { label: 'ListContainerStats{}', method: 'ListContainerStats', request: {} },
    { label: 'ListPodSandboxStats{}', method: 'ListPodSandboxStats', request: {} },
    { label: 'ListPodSandboxMetrics{}', method: 'ListPodSandboxMetrics', request: {} },
  ];

  const results: Measured[] = [];
  const answers: Record<string, unknown> = {};
  for (const c of cases) {
    if (only !== undefined && !c.label.includes(only)) continue;
    const m = methods[c.method];
    // The request as the server hands it over: decoded, with its defaults.
    const request = m.requestDeserialize(m.requestSerialize(c.request as never));
    const handler = service[c.method] as (req: unknown, ctx: CallContext) => Promise<object>;
    const once = async (): Promise<{ answer: object; bytes: number }> => {
      const answer = await handler(request, { method: c.method, signal: new AbortController().signal, deadline: undefined });
      return { answer, bytes: (m.responseSerialize as (v: object) => Buffer)(answer).length };
    };
    for (let i = 0; i < 10; i++) await once();
    const walls: number[] = [];
    let items = 0;
    const before = process.cpuUsage();
    for (let i = 0; i < calls; i++) {
      const t0 = performance.now();
      const { answer } = await once();
      walls.push(performance.now() - t0);
      items = Object.values(answer).find(Array.isArray)?.length ?? 0;
      if (i === 0 && dump && !c.method.includes('Stats') && !c.method.includes('Metrics')) answers[c.label] = answer;
    }
    const used = process.cpuUsage(before);
    results.push({ call: c.label, items, cpuMsPerCall: (used.user + used.system) / 1000 / calls, wallP50Ms: summarize(walls).p50 });
  }

  console.log(`${pods} pods, ${pods * 2} containers, ${calls} calls each${cgroups ? ', real cgroup files' : ', no cgroup files'}`);
  console.log('| call | items | CPU ms/call | wall p50 ms |\n| --- | ---: | ---: | ---: |');
  for (const r of results) console.log(`| ${r.call} | ${r.items} | ${r.cpuMsPerCall.toFixed(2)} | ${r.wallP50Ms.toFixed(2)} |`);
  if (dump) fs.writeFileSync(dump, `${JSON.stringify(answers, null, 1)}\n`);

  await cache.stop();
  cgroupReader.close();
  await fake.close();
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
