// Each translated field of the container config, checked from inside the running container.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { dockerApi, TEST_USER } from '../support/images';
import { useShim } from '../support/fixture';
import { busybox, runContainer, sh, SLEEP_FOREVER } from '../support/pods';

function statusField(text: string, name: string): string {
  const m = new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(text);
  assert.ok(m, `${name} in /proc/self/status`);
  return m[1]!.trim();
}

describe('container config inside the container', () => {
  const f = useShim({ pod: 'sec' });
  const { run } = f;

  it('runs the command with args, env and working dir, in the pod hostname and namespaces', async () => {
    const id = await runContainer(f.client, f.pod, busybox(run, 'basic', {
      command: ['sh', '-c'],
      args: ['sleep 3600'],
      envs: [{ key: 'GREETING', value: Buffer.from('hello world') }],
      workingDir: '/tmp',
    }));
    assert.equal(await sh(f.client, id, 'echo "$GREETING:$(pwd):$(hostname)"'), 'hello world:/tmp:sec\n');
    const pausePid = (await dockerApi().getContainer(f.pod.id).inspect()).State.Pid;
    // Docker gives the container its own UTS namespace with the pod's hostname (checked above).
    for (const ns of ['net', 'ipc']) {
      const inside = (await sh(f.client, id, `readlink /proc/self/ns/${ns}`)).trim();
      assert.equal(inside, fs.readlinkSync(`/proc/${pausePid}/ns/${ns}`), `${ns} namespace is the pause container's`);
    }
    assert.notEqual((await sh(f.client, id, 'readlink /proc/self/ns/pid')).trim(), fs.readlinkSync(`/proc/${pausePid}/ns/pid`));
  });

  it('shares the pod PID namespace when asked', async () => {
    const id = await runContainer(f.client, f.pod, busybox(run, 'pidpod', { ...SLEEP_FOREVER, linux: { securityContext: { namespaceOptions: { pid: 'POD' } } } }));
    assert.match(await sh(f.client, id, 'cat /proc/1/cmdline'), /^\/pause/);
  });

  it('runs as the given user, group and supplemental groups', async () => {
    const id = await runContainer(f.client, f.pod, busybox(run, 'user', {
      ...SLEEP_FOREVER,
      linux: { securityContext: { runAsUser: { value: TEST_USER.uid }, runAsGroup: { value: 4321 }, supplementalGroups: [5, 6] } },
    }));
    const status = await sh(f.client, id, 'cat /proc/self/status');
    assert.equal(statusField(status, 'Uid').split(/\s+/)[0], String(TEST_USER.uid));
    assert.equal(statusField(status, 'Gid').split(/\s+/)[0], '4321');
    // The image's /etc/group lists tester in no group: the primary group and the requested ones.
    assert.deepEqual(statusField(status, 'Groups').split(/\s+/).sort(), ['4321', '5', '6']);
    const { status: cri } = await f.client.runtime.ContainerStatus({ containerId: id });
    assert.equal(cri!.user!.linux!.uid, String(TEST_USER.uid));
    assert.equal(cri!.user!.linux!.gid, '4321');

    const byName = await runContainer(f.client, f.pod, busybox(run, 'username', { ...SLEEP_FOREVER, linux: { securityContext: { runAsUsername: TEST_USER.name } } }));
    assert.equal((await sh(f.client, byName, 'id -u')).trim(), String(TEST_USER.uid));
  });

  it('sets capabilities, no_new_privs, a read-only rootfs, masked and read-only paths', async () => {
    const id = await runContainer(f.client, f.pod, busybox(run, 'caps', {
      ...SLEEP_FOREVER,
      linux: {
        securityContext: {
          capabilities: { dropCapabilities: ['ALL'], addCapabilities: ['NET_ADMIN', 'CAP_KILL'] },
          noNewPrivs: true,
          readonlyRootfs: true,
          maskedPaths: ['/etc/group'],
          readonlyPaths: ['/var/log'],
        },
      },
    }));
    const status = await sh(f.client, id, 'cat /proc/self/status');
    // NET_ADMIN is bit 12, KILL bit 5.
    assert.equal(BigInt(`0x${statusField(status, 'CapEff')}`), (1n << 12n) | (1n << 5n));
    assert.equal(statusField(status, 'NoNewPrivs'), '1');
    assert.notEqual((await f.client.runtime.ExecSync({ containerId: id, cmd: ['touch', '/rootfs-file'], timeout: 10 })).exitCode, 0, 'rootfs is read-only');
    assert.equal(await sh(f.client, id, 'cat /etc/group'), '', '/etc/group is masked');
    assert.match(await sh(f.client, id, 'grep " /var/log " /proc/self/mounts'), / ro[, ]/);
  });

  it('blocks a syscall with a localhost seccomp profile', async () => {
    const dir = f.tempDir('seccomp');
    const profile = path.join(dir, 'no-mkdir.json');
    fs.writeFileSync(profile, JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }] }));
    const id = await runContainer(f.client, f.pod, busybox(run, 'seccomp', { ...SLEEP_FOREVER, linux: { securityContext: { seccomp: { profileType: 'Localhost', localhostRef: profile } } } }));
    const res = await f.client.runtime.ExecSync({ containerId: id, cmd: ['mkdir', '/tmp/blocked'], timeout: 10 });
    assert.notEqual(res.exitCode, 0);
    assert.match(res.stderr.toString(), /Operation not permitted/);
    assert.equal(statusField(await sh(f.client, id, 'cat /proc/self/status'), 'Seccomp'), '2');
    const unconfined = await runContainer(f.client, f.pod, busybox(run, 'unconfined', SLEEP_FOREVER));
    assert.equal(statusField(await sh(f.client, unconfined, 'cat /proc/self/status'), 'Seccomp'), '0', 'no profile means unconfined, as with dockershim');
  });

  it('maps devices with their permissions', async () => {
    // /dev/kmsg (char 1:11) is not among Docker's default devices, so its rule is ours alone.
    const id = await runContainer(f.client, f.pod, busybox(run, 'dev', { ...SLEEP_FOREVER, devices: [{ hostPath: '/dev/kmsg', containerPath: '/dev/mykmsg', permissions: 'r' }] }));
    assert.equal(await sh(f.client, id, 'test -c /dev/mykmsg && echo char'), 'char\n');
    const rules = (await sh(f.client, id, 'cat /sys/fs/cgroup/devices/devices.list')).split('\n');
    assert.ok(rules.includes('c 1:11 r'), `device rule in ${rules.join(', ')}`);
  });

  it('binds mounts read-only, through a symlink, and with host-to-container propagation', async () => {
    const base = f.tempDir('mounts');
    // A shared tmpfs of our own: Docker only allows slave/shared propagation from a shared mount.
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'cds-test', base]);
    execFileSync('mount', ['--make-shared', base]);
    try {
      fs.mkdirSync(path.join(base, 'data'));
      fs.writeFileSync(path.join(base, 'data', 'file'), 'from host');
      fs.symlinkSync(path.join(base, 'data'), path.join(base, 'link'));
      fs.mkdirSync(path.join(base, 'data', 'sub'));
      const id = await runContainer(f.client, f.pod, busybox(run, 'mounts', {
        ...SLEEP_FOREVER,
        mounts: [
          { hostPath: path.join(base, 'data'), containerPath: '/ro', readonly: true },
          { hostPath: path.join(base, 'link'), containerPath: '/via-link' },
          { hostPath: path.join(base, 'data'), containerPath: '/slave', propagation: 'PROPAGATION_HOST_TO_CONTAINER' },
        ],
      }));
      assert.equal(await sh(f.client, id, 'cat /ro/file'), 'from host');
      assert.notEqual((await f.client.runtime.ExecSync({ containerId: id, cmd: ['touch', '/ro/new'], timeout: 10 })).exitCode, 0);
      assert.equal(await sh(f.client, id, 'cat /via-link/file'), 'from host');
      assert.match(await sh(f.client, id, 'grep " /slave " /proc/self/mountinfo'), /master:\d+/);
      // A mount made on the host after the start reaches the container through the slave mount.
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'cds-test-sub', path.join(base, 'data', 'sub')]);
      fs.writeFileSync(path.join(base, 'data', 'sub', 'late'), 'propagated');
      assert.equal(await sh(f.client, id, 'cat /slave/sub/late'), 'propagated');
      assert.notEqual((await f.client.runtime.ExecSync({ containerId: id, cmd: ['cat', '/ro/sub/late'], timeout: 10 })).exitCode, 0, 'a private mount does not see it');
      const { status } = await f.client.runtime.ContainerStatus({ containerId: id });
      const slave = status!.mounts.find((m) => m.containerPath === '/slave');
      assert.equal(slave?.propagation, 'PROPAGATION_HOST_TO_CONTAINER');
      assert.equal(status!.mounts.find((m) => m.containerPath === '/ro')?.readonly, true);
      await f.client.runtime.RemoveContainer({ containerId: id });
    } finally {
      execFileSync('umount', ['-R', base]);
    }
  });
});
