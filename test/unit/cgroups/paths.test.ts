import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  cgroupPathFor,
  dirsFromCgroupPath,
  dirsFromProcCgroup,
  dirOfFile,
  parseMountInfo,
  parseProcCgroup,
  podCgroupDirs,
  procsDirOf,
  slicePath,
} from '../../../src/cgroups/paths';

const ID = 'e291a112656c736746464ad543b477ebd31f8e86d60c2cc7326dd75169998de5';

// This machine's layout: one v1 hierarchy per controller plus an empty unified tree (hybrid).
const HYBRID_MOUNTINFO = [
  '25 31 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec - tmpfs tmpfs ro,mode=755',
  '26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw',
  '27 25 0:24 / /sys/fs/cgroup/systemd rw,nosuid shared:11 - cgroup cgroup rw,xattr,name=systemd',
  '30 25 0:27 / /sys/fs/cgroup/memory rw,nosuid shared:14 - cgroup cgroup rw,memory',
  '31 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:15 - cgroup cgroup rw,cpu,cpuacct',
  '32 25 0:29 / /sys/fs/cgroup/pids rw,nosuid shared:16 - cgroup cgroup rw,pids',
  '40 31 8:1 / / rw,relatime - ext4 /dev/sda1 rw',
].join('\n');

/** A container's directories in that layout, cpu and cpuacct co-mounted. */
const HYBRID_DIRS = {
  version: 1,
  dirs: {
    cpu: `/sys/fs/cgroup/cpu,cpuacct/docker/${ID}`,
    cpuacct: `/sys/fs/cgroup/cpu,cpuacct/docker/${ID}`,
    memory: `/sys/fs/cgroup/memory/docker/${ID}`,
    pids: `/sys/fs/cgroup/pids/docker/${ID}`,
  },
};

const V2_MOUNTINFO = '35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n';

describe('parseMountInfo', () => {
  it('finds v1 hierarchies with their controllers (co-mounted ones too) and the unified one', () => {
    const mounts = parseMountInfo(HYBRID_MOUNTINFO);
    assert.deepEqual(
      mounts.map((m) => [m.version, m.mountPoint, m.controllers.join('+')]),
      [
        [2, '/sys/fs/cgroup/unified', ''],
        [1, '/sys/fs/cgroup/systemd', 'name=systemd'],
        [1, '/sys/fs/cgroup/memory', 'memory'],
        [1, '/sys/fs/cgroup/cpu,cpuacct', 'cpu+cpuacct'],
        [1, '/sys/fs/cgroup/pids', 'pids'],
      ],
    );
  });
  it('decodes octal escapes and keeps a non-root mount root', () => {
    const [m] = parseMountInfo('50 25 0:27 /kubepods /mnt/my\\040cgroups rw - cgroup cgroup rw,memory\n');
    assert.equal(m!.mountPoint, '/mnt/my cgroups');
    assert.equal(m!.root, '/kubepods');
  });
});

describe('parseProcCgroup', () => {
  it('reads v1 controller lists and the v2 line', () => {
    const entries = parseProcCgroup(`4:memory:/docker/${ID}\n2:cpu,cpuacct:/docker/${ID}\n0::/docker/${ID}\n`);
    assert.deepEqual(entries, [
      { controllers: ['memory'], path: `/docker/${ID}` },
      { controllers: ['cpu', 'cpuacct'], path: `/docker/${ID}` },
      { controllers: [], path: `/docker/${ID}` },
    ]);
  });
});

describe('dirsFromProcCgroup', () => {
  it('v1 (hybrid): each figure from its controller hierarchy, not from the empty unified tree', () => {
    const entries = parseProcCgroup(`8:pids:/docker/${ID}\n4:memory:/docker/${ID}\n2:cpu,cpuacct:/docker/${ID}\n0::/docker/${ID}\n`);
    assert.deepEqual(dirsFromProcCgroup(entries, parseMountInfo(HYBRID_MOUNTINFO)), HYBRID_DIRS);
  });
  it('v2 with the systemd driver: the scope under its slice', () => {
    const entries = parseProcCgroup(`0::/kubepods.slice/kubepods-pod1.slice/docker-${ID}.scope\n`);
    assert.deepEqual(dirsFromProcCgroup(entries, parseMountInfo(V2_MOUNTINFO)), {
      version: 2,
      dir: `/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice/docker-${ID}.scope`,
    });
  });
  it('maps a path through a mount whose root is not "/", and refuses one outside it', () => {
    const mounts = parseMountInfo('50 25 0:30 /kubepods /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n');
    assert.deepEqual(dirsFromProcCgroup([{ controllers: [], path: '/kubepods/pod1/abc' }], mounts), { version: 2, dir: '/sys/fs/cgroup/pod1/abc' });
    assert.equal(dirsFromProcCgroup([{ controllers: [], path: '/other/abc' }], mounts), undefined);
    assert.equal(dirsFromProcCgroup([{ controllers: [], path: '/kubepods/../../etc' }], mounts), undefined);
  });
  it('no matching hierarchy: undefined', () => {
    assert.equal(dirsFromProcCgroup(parseProcCgroup('0::/x\n'), []), undefined);
  });
});

describe('driver naming (for a process we cannot see)', () => {
  it('cgroupfs: <parent or /docker>/<id>', () => {
    assert.equal(cgroupPathFor('cgroupfs', '', ID), `/docker/${ID}`);
    assert.equal(cgroupPathFor('cgroupfs', '/kubepods/burstable/pod1', ID), `/kubepods/burstable/pod1/${ID}`);
  });
  it('systemd: the slice expanded level by level, then docker-<id>.scope', () => {
    assert.equal(slicePath('kubepods-burstable-pod1.slice'), '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice');
    assert.equal(slicePath('-.slice'), '/');
    assert.equal(cgroupPathFor('systemd', '', ID), `/system.slice/docker-${ID}.scope`);
    assert.equal(
      cgroupPathFor('systemd', 'kubepods-besteffort-pod2.slice', ID),
      `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod2.slice/docker-${ID}.scope`,
    );
  });
  it('turns such a path into directories for v1 and v2', () => {
    assert.deepEqual(dirsFromCgroupPath(`/docker/${ID}`, parseMountInfo(HYBRID_MOUNTINFO)), HYBRID_DIRS);
    assert.deepEqual(dirsFromCgroupPath(`/system.slice/docker-${ID}.scope`, parseMountInfo(V2_MOUNTINFO)), {
      version: 2,
      dir: `/sys/fs/cgroup/system.slice/docker-${ID}.scope`,
    });
  });
});

describe('directories for every controller read (the metrics read cpu and blkio too)', () => {
  const v1Mounts = parseMountInfo([
    '30 25 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu',
    '31 25 0:27 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct',
    '32 25 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory',
    '33 25 0:29 / /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio',
    '34 25 0:30 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw',
  ].join('\n'));
  const v2Mounts = parseMountInfo('29 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate');

  it('v1: one directory per controller, including cpu and blkio; a missing controller is left out', () => {
    const entries = parseProcCgroup('4:memory:/docker/abc\n3:blkio:/docker/abc\n2:cpuacct:/docker/abc\n1:cpu:/docker/abc\n0::/docker/abc\n');
    const dirs = dirsFromProcCgroup(entries, v1Mounts)!;
    assert.deepEqual(dirs, { version: 1, dirs: { cpu: '/sys/fs/cgroup/cpu/docker/abc', cpuacct: '/sys/fs/cgroup/cpuacct/docker/abc', memory: '/sys/fs/cgroup/memory/docker/abc', blkio: '/sys/fs/cgroup/blkio/docker/abc' } });
    assert.equal(dirOfFile(dirs, 'cpu.stat'), '/sys/fs/cgroup/cpu/docker/abc');
    assert.equal(dirOfFile(dirs, 'pids.current'), undefined);
    assert.equal(procsDirOf(dirs), '/sys/fs/cgroup/memory/docker/abc');
  });

  it('v2 and the driver naming fallback', () => {
    assert.deepEqual(dirsFromProcCgroup(parseProcCgroup('0::/system.slice/docker-abc.scope\n'), v2Mounts), { version: 2, dir: '/sys/fs/cgroup/system.slice/docker-abc.scope' });
    assert.deepEqual(dirsFromCgroupPath(cgroupPathFor('systemd', '', 'abc'), v2Mounts), { version: 2, dir: '/sys/fs/cgroup/system.slice/docker-abc.scope' });
    assert.equal((dirsFromCgroupPath(cgroupPathFor('cgroupfs', '/kubepods/pod1', 'abc'), v1Mounts) as { dirs: Record<string, string> }).dirs.cpu, '/sys/fs/cgroup/cpu/kubepods/pod1/abc');
  });
});

describe('podCgroupDirs', () => {
  it('cgroupfs v1: one level up, into the named parent', () => {
    const dirs = { version: 1 as const, dirs: { cpuacct: `/cg/cpu,cpuacct/kubepods/pod1/${ID}`, memory: `/cg/memory/kubepods/pod1/${ID}`, pids: `/cg/pids/kubepods/pod1/${ID}` } };
    assert.deepEqual(podCgroupDirs(dirs, '/kubepods/pod1', ID), {
      version: 1,
      dirs: {
        cpuacct: '/cg/cpu,cpuacct/kubepods/pod1',
        memory: '/cg/memory/kubepods/pod1',
        pids: '/cg/pids/kubepods/pod1',
      },
    });
  });
  it('systemd v2: the slice holding the scope', () => {
    const dir = `/cg/kubepods.slice/kubepods-pod1.slice/docker-${ID}.scope`;
    assert.deepEqual(podCgroupDirs({ version: 2, dir }, 'kubepods-pod1.slice', ID), { version: 2, dir: '/cg/kubepods.slice/kubepods-pod1.slice' });
  });
  it('no parent of its own (Docker\'s shared default), or a layout that does not fit: none', () => {
    assert.equal(podCgroupDirs({ version: 2, dir: `/cg/docker/${ID}` }, '', ID), undefined);
    assert.equal(podCgroupDirs({ version: 2, dir: `/cg/other/${ID}` }, '/kubepods/pod1', ID), undefined);
    assert.equal(podCgroupDirs({ version: 2, dir: '/cg/kubepods/pod1/somebody-else' }, '/kubepods/pod1', ID), undefined);
  });
});
