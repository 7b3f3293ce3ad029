import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import type { ContainerInspect, ContainerSummary } from '../../../src/docker/types';
import { CgroupReader } from '../../../src/cgroups/reader';
import { StatsCollector } from '../../../src/stats/stats-collector';
import { objectFromSummary } from '../../../src/object-store/shim-objects';
import { silentLogger } from '../../../src/util/logger';
import { FakeDocker } from '../../support/fake-docker';
import { inspectDoc, runningState } from '../../support/fixtures/docker-container';

const ID = 'ab12'.repeat(16);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-stats-unit-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function writeTree(root: string, files: Record<string, string>): void {
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
}

describe('StatsCollector with a fixture /proc and cgroup v2 tree', () => {
  function inspectOf(pid: number): ContainerInspect {
    return inspectDoc({
      Id: ID,
      State: runningState(undefined, { Pid: pid }),
      HostConfig: { CgroupParent: 'kubepods-besteffort-pod9.slice' },
      GraphDriver: { Name: 'overlay2', Data: { UpperDir: path.join(tmp, 'overlay2', 'layer1', 'diff') } },
    });
  }
  const summary = { Id: ID, Names: ['/k8s_app_web_ns_uid1_2'], Created: 1700000000, Image: 'busybox', State: 'running', Labels: { team: 'a', 'annotation.note': 'x', 'io.kubernetes.docker.type': 'container' } } as unknown as ContainerSummary;
  const running = objectFromSummary(summary)!;

  function setUp(name: string, procCgroup: string | undefined) {
    const root = path.join(tmp, name);
    const cg = path.join(root, 'sys', 'fs', 'cgroup');
    const scope = path.join(cg, 'kubepods.slice', 'kubepods-besteffort.slice', 'kubepods-besteffort-pod9.slice', `docker-${ID}.scope`);
    writeTree(root, {
      'proc/self/mountinfo': `35 24 0:30 / ${cg} rw,nosuid - cgroup2 cgroup2 rw\n`,
      ...(procCgroup === undefined ? {} : { 'proc/77/cgroup': procCgroup }),
    });
    writeTree(scope, { 'cpu.stat': 'usage_usec 2000\n', 'memory.current': '8192\n', 'memory.stat': 'inactive_file 4096\n', 'pids.current': '1\n' });
    writeTree(path.join(tmp, 'overlay2', 'layer1', 'diff'), { 'file.txt': 'x'.repeat(10_000) });
    const docker = new FakeDocker();
    docker.containers.set(ID, inspectOf(77));
    // The writable layer's figure is the background's (../storage); a fixed one here.
    const storage = { mountpoint: path.join(tmp, 'overlay2'), writableLayer: (id: string) => (id === ID ? { bytes: 12_288, inodes: 2, atMs: 1_700_000_000_000 } : undefined) };
    const cgroupReader = new CgroupReader({ driver: 'systemd', log: silentLogger(), procRoot: path.join(root, 'proc') });
    const collector = new StatsCollector({ docker, cgroupReader, storage });
    return { collector, cgroupReader, scope, root, docker, inspects: () => docker.argsOf('inspectContainer').length };
  }

  it('finds the scope from /proc/<pid>/cgroup, inspects once, and gives attributes, CPU, memory and the writable layer', async () => {
    const rel = `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9.slice/docker-${ID}.scope`;
    const { collector, inspects } = setUp('v2-proc', `0::${rel}\n`);
    const signal = new AbortController().signal;
    const first = await collector.containerStats(running, signal);
    assert.deepEqual(first!.attributes, { id: ID, metadata: { name: 'app', attempt: 2 }, labels: { team: 'a' }, annotations: { note: 'x' } });
    assert.equal(first!.cpu!.usageCoreNanoSeconds!.value, 2000000);
    assert.equal(first!.cpu!.usageNanoCores, undefined, 'no rate on the first reading');
    assert.equal(first!.memory!.workingSetBytes!.value, 4096);
    assert.equal(first!.memory!.usageBytes!.value, 8192);
    assert.equal(first!.writableLayer!.fsId!.mountpoint, path.join(tmp, 'overlay2'));
    assert.equal(first!.writableLayer!.usedBytes!.value, 12_288);
    assert.equal(first!.writableLayer!.inodesUsed!.value, 2);
    assert.equal(first!.writableLayer!.timestamp, '1700000000000000000', 'the time it was measured, not the time of the call');
    const second = await collector.containerStats(running, signal);
    assert.equal(inspects(), 1, 'the target is remembered');
    assert.equal(second!.attributes, first!.attributes, 'the attributes of one object (one document) are made once');
    const relabelled = objectFromSummary({ ...summary, Labels: { ...summary.Labels, team: 'b' } })!;
    assert.deepEqual((await collector.containerStats(relabelled, signal))!.attributes!.labels, { team: 'b' }, 'a new document\'s object gets its own');
  });

  it('a container seen stopped is looked up afresh when it runs again (a new process, here in another cgroup)', async () => {
    const rel = `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9.slice/docker-${ID}.scope`;
    const { collector, cgroupReader, inspects, root, docker } = setUp('v2-restart', `0::${rel}\n`);
    const signal = new AbortController().signal;
    assert.equal((await collector.containerStats(running, signal))!.memory!.usageBytes!.value, 8192);
    assert.equal((await collector.containerStats(objectFromSummary({ ...summary, State: 'exited' })!, signal))!.memory!.usageBytes!.value, 0);
    writeTree(path.join(root, 'sys', 'fs', 'cgroup', 'moved.slice', `docker-${ID}.scope`), { 'cpu.stat': 'usage_usec 1\n', 'memory.current': '512\n' });
    writeTree(root, { 'proc/78/cgroup': `0::/moved.slice/docker-${ID}.scope\n` });
    docker.containers.set(ID, inspectOf(78));
    assert.equal((await collector.containerStats(running, signal))!.memory!.usageBytes!.value, 512);
    assert.equal(inspects(), 2);
    cgroupReader.close();
  });

  it('a PID now held by another process (its cgroup does not name the container) falls back to the driver naming', async () => {
    const { collector, inspects } = setUp('v2-reused', '0::/user.slice/session-1.scope\n');
    const stats = await collector.containerStats(running, new AbortController().signal);
    assert.equal(stats!.memory!.workingSetBytes!.value, 4096);
    assert.equal(inspects(), 1);
  });

  it('falls back to the systemd driver naming when the process cannot be seen', async () => {
    const { collector } = setUp('v2-fallback', undefined);
    const stats = await collector.containerStats(running, new AbortController().signal);
    assert.equal(stats!.cpu!.usageCoreNanoSeconds!.value, 2000000);
    assert.equal(stats!.memory!.workingSetBytes!.value, 4096);
  });

  it('a container\'s stats read no process count (the message has none); a pod\'s member figures do', async () => {
    const { collector, cgroupReader } = setUp('v2-files', undefined);
    const signal = new AbortController().signal;
    // The fixture's scope has cpu.stat, memory.current, memory.stat and pids.current.
    await collector.containerStats(running, signal);
    assert.equal(cgroupReader.heldFiles, 3, 'cpu.stat, memory.current and memory.stat: pids.current is not read');
    const member = await collector.containerFigures(running, signal);
    assert.equal(member!.sample!.processCount, 1n, 'a pod sums its members\' process counts');
    assert.equal(cgroupReader.heldFiles, 4);
    cgroupReader.close();
  });

  it('a container that is not running reports zero usage and still its layer', async () => {
    const { collector } = setUp('v2-exited', undefined);
    const exited = objectFromSummary({ ...summary, State: 'exited' })!;
    const stats = await collector.containerStats(exited, new AbortController().signal);
    assert.equal(stats!.cpu!.usageCoreNanoSeconds!.value, 0);
    assert.equal(stats!.memory!.workingSetBytes!.value, 0);
    assert.ok(stats!.writableLayer);
  });
});
