import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type {
  ContainerConfig__Output,
  LinuxContainerSecurityContext__Output,
  Mount__Output,
} from '../../../../src/cri/types';
import { InvalidArgumentError, UnimplementedError } from '../../../../src/errors';
import { buildCreatePlan, envList, logPathOf, namespaceModes, type HostView } from '../../../../src/translate/to-docker/container-create-spec';
import { toCdiDeviceRequests, toDockerDevices, toDockerMounts } from '../../../../src/translate/to-docker/container-mounts';
import { engineFeatures, type EngineFeatures } from '../../../../src/docker/docker-version';
import { translateSecurityContext } from '../../../../src/translate/to-docker/container-security';
import { dockerStopSignal, criSignal } from '../../../../src/conventions/signals';
import { containerConfig, sandboxConfig } from '../../../support/fixtures/cri';

const SANDBOX = 'a'.repeat(64);
/** Docker 20.10 (API 1.41); Docker 28 (API 1.51) on this kernel. */
// Both with SELinux labelling on, where relabelling means something; NO_SELINUX_28 without.
const DOCKER_20: EngineFeatures = engineFeatures('1.41', '6.1.0', { SecurityOptions: ['name=seccomp,profile=default', 'name=selinux'] });
const DOCKER_28: EngineFeatures = engineFeatures('1.51', '6.1.0', { CDISpecDirs: ['/etc/cdi', '/var/run/cdi'], SecurityOptions: ['name=selinux'] });
const NO_SELINUX_28: EngineFeatures = { ...DOCKER_28, selinux: false };

function securityContext(over: Partial<LinuxContainerSecurityContext__Output> = {}): LinuxContainerSecurityContext__Output {
  return {
    capabilities: null, privileged: false, namespaceOptions: null, selinuxOptions: null, runAsUser: null,
    runAsUsername: '', readonlyRootfs: false, supplementalGroups: [], apparmorProfile: '', seccompProfilePath: '',
    noNewPrivs: false, runAsGroup: null, maskedPaths: [], readonlyPaths: [], seccomp: null, apparmor: null,
    supplementalGroupsPolicy: 'Merge', ...over,
  };
}

function mount(over: Partial<Mount__Output> = {}): Mount__Output {
  return {
    containerPath: '/data', hostPath: '/srv/data', readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE',
    uidMappings: [], gidMappings: [], recursiveReadOnly: false, image: null, imageSubPath: '', mountOptions: [], ...over,
  };
}

const files: Record<string, string> = { '/profiles/deny-mkdir.json': '{"defaultAction":"SCMP_ACT_ALLOW"}', '/profiles/bad.json': 'nope' };
const host: HostView = {
  readText(p) {
    const text = files[p];
    if (text === undefined) throw Object.assign(new Error('missing'), { code: 'ENOENT' });
    return text;
  },
  resolvePath: (p) => (p === '/srv/link' ? '/srv/target' : p),
};

function plan(config: ContainerConfig__Output, sandbox = sandboxConfig()) {
  return buildCreatePlan({ sandboxId: SANDBOX, config, sandboxConfig: sandbox, cgroupDriver: 'cgroupfs', host, engine: DOCKER_20 });
}

describe('container create spec', () => {
  it('names the container as dockershim did and labels it for the shim', () => {
    const { spec, logPath } = plan(containerConfig({ logPath: 'app/2.log', labels: { tier: 'web' }, annotations: { note: 'x' } }));
    assert.equal(spec.name, 'k8s_app_web_default_u-1_2');
    assert.equal(logPath, '/var/log/pods/x/app/2.log');
    const own = ['annotation.note', 'io.kubernetes.container.logpath', 'io.kubernetes.docker.type', 'io.kubernetes.sandbox.id', 'tier'];
    assert.deepEqual(spec.Labels, {
      tier: 'web',
      'annotation.note': 'x',
      'io.kubernetes.docker.type': 'container',
      'io.kubernetes.sandbox.id': SANDBOX,
      'io.kubernetes.container.logpath': '/var/log/pods/x/app/2.log',
      'io.cri-docker-shim.own-labels': JSON.stringify({ name: 'k8s_app_web_default_u-1_2', keys: own }),
    });
    assert.equal(spec.HostConfig?.CgroupParent, '/kubepods/pod1');
  });

  it("turns Docker's health check off, whatever the image says (kubelet owns probes)", () => {
    assert.deepEqual(plan(containerConfig({})).spec.Healthcheck, { Test: ['NONE'] });
  });

  it('writes the log path label even when there is none, so an image\'s label of that key never shows through', () => {
    const { spec, logPath } = plan(containerConfig({ logPath: '' }), sandboxConfig({ logDirectory: '' }));
    assert.equal(logPath, '');
    assert.equal(spec.Labels?.['io.kubernetes.container.logpath'], '');
    assert.match(spec.Labels?.['io.cri-docker-shim.own-labels'] ?? '', /"io\.kubernetes\.container\.logpath"/);
  });

  it('refuses the shim\'s own labels and the annotation prefix among the request\'s labels', () => {
    // With no log path of its own, a request's log path label would name the file StartContainer appends the output to.
    assert.throws(() => plan(containerConfig({ logPath: '', labels: { 'io.kubernetes.container.logpath': '/etc/ld.so.preload' } })), /^InvalidArgumentError: config.labels: "io.kubernetes.container.logpath" is reserved for the runtime/);
    for (const key of ['io.kubernetes.sandbox.id', 'io.kubernetes.docker.type', 'io.kubernetes.cri-docker-shim.runtime-handler', 'io.cri-docker-shim.own-labels']) {
      assert.throws(() => plan(containerConfig({ labels: { [key]: 'x' } })), /is reserved for the runtime/, key);
    }
    assert.throws(() => plan(containerConfig({ labels: { 'annotation.note': 'x' } })), /which the runtime uses for annotations/);
  });

  it('joins the pod namespaces through the pause container', () => {
    const { spec } = plan(containerConfig());
    assert.equal(spec.HostConfig?.NetworkMode, `container:${SANDBOX}`);
    assert.equal(spec.HostConfig?.IpcMode, `container:${SANDBOX}`);
    assert.equal(spec.HostConfig?.PidMode, '');
  });

  it('maps each PID namespace mode', () => {
    const ns = (pid: 'POD' | 'CONTAINER' | 'NODE' | 'TARGET', targetId = '') => namespaceModes(SANDBOX, { network: 'POD', ipc: 'POD', pid, targetId, usernsOptions: null });
    assert.equal(ns('POD').PidMode, `container:${SANDBOX}`);
    assert.equal(ns('CONTAINER').PidMode, '');
    assert.equal(ns('NODE').PidMode, 'host');
    assert.equal(ns('POD').UTSMode, '');
    assert.equal(namespaceModes(SANDBOX, { network: 'NODE', ipc: 'POD', pid: 'POD', targetId: '', usernsOptions: null }).UTSMode, 'host');
    assert.equal(ns('TARGET', 'bbbb').PidMode, 'container:bbbb');
    assert.throws(() => ns('TARGET', '../x'), /target_id/);
    assert.throws(
      () => namespaceModes(SANDBOX, { network: 'POD', ipc: 'POD', pid: 'POD', targetId: '', usernsOptions: { mode: 'POD', uids: [], gids: [] } }),
      (e: unknown) => e instanceof UnimplementedError && /user namespace/.test(e.message),
    );
  });

  it('applies the command/args override rules', () => {
    assert.deepEqual([plan(containerConfig()).spec.Entrypoint, plan(containerConfig()).spec.Cmd], [undefined, undefined]);
    const both = plan(containerConfig({ command: ['sh', '-c'], args: ['echo hi'] })).spec;
    assert.deepEqual([both.Entrypoint, both.Cmd], [['sh', '-c'], ['echo hi']]);
    const argsOnly = plan(containerConfig({ args: ['x'] })).spec;
    assert.deepEqual([argsOnly.Entrypoint, argsOnly.Cmd], [undefined, ['x']]);
    const commandOnly = plan(containerConfig({ command: ['top'] })).spec;
    assert.deepEqual([commandOnly.Entrypoint, commandOnly.Cmd], [['top'], undefined]);
  });

  it('translates env, working dir, tty and stdin', () => {
    const { spec } = plan(containerConfig({ envs: [{ key: 'A', value: Buffer.from('1=2') }], workingDir: '/w', tty: true, stdin: true, stdinOnce: true }));
    assert.deepEqual(spec.Env, ['A=1=2']);
    assert.equal(spec.WorkingDir, '/w');
    assert.deepEqual([spec.Tty, spec.OpenStdin, spec.StdinOnce], [true, true, true]);
    assert.throws(() => plan(containerConfig({ envs: [{ key: '', value: Buffer.from('x') }] })), /config.envs\[0\].key/);
  });

  it('gives Docker env values (bytes since CRI v1.37) exactly when they are UTF-8 without NUL, and refuses others naming the variable', () => {
    // Non-ASCII, 4-byte UTF-8, a leading byte-order mark (a decoder that drops it would change the value), empty.
    const values = ['grüße ✓ 𝄞', '\uFEFFbom', ''];
    const env = envList(values.map((v, i) => ({ key: `V${i}`, value: Buffer.from(v, 'utf8') })));
    assert.deepEqual(env, values.map((v, i) => `V${i}=${v}`));
    const refused = (value: number[], why: RegExp): void => {
      const envs = [{ key: 'OK', value: Buffer.from('fine') }, { key: 'SECRET_BLOB', value: Buffer.from(value) }];
      assert.throws(() => plan(containerConfig({ envs })), (err: unknown) => {
        assert.ok(err instanceof InvalidArgumentError, String(err));
        assert.match(err.message, /^config\.envs\[1\]\.value of "SECRET_BLOB": /);
        assert.match(err.message, why);
        return true;
      });
    };
    refused([0xff, 0x41], /not valid UTF-8/);
    refused([0xc3], /not valid UTF-8/); // cut inside a character
    refused([0xed, 0xa0, 0x80], /not valid UTF-8/); // a UTF-16 surrogate, which UTF-8 does not encode
    refused([0x61, 0x00, 0x62], /NUL/);
    assert.throws(() => envList([{ key: 'A\0B', value: Buffer.from('x') }]), /config\.envs\[0\]\.key: "A\\u0000B" is not a variable name/);
  });

  it('translates resources and refuses what Docker cannot limit', () => {
    const resources = {
      cpuPeriod: '100000', cpuQuota: '50000', cpuShares: '512', memoryLimitInBytes: '67108864', oomScoreAdj: '500',
      cpusetCpus: '0', cpusetMems: '', hugepageLimits: [{ pageSize: '2MB', limit: '0' }], unified: {}, memorySwapLimitInBytes: '0',
    };
    const { spec } = plan(containerConfig({ linux: { resources, securityContext: null } }));
    const hc = spec.HostConfig!;
    assert.deepEqual([hc.CpuPeriod, hc.CpuQuota, hc.CpuShares, hc.Memory, hc.MemorySwap, hc.OomScoreAdj, hc.CpusetCpus], [100000, 50000, 512, 67108864, 67108864, 500, '0']);
    assert.throws(() => plan(containerConfig({ linux: { resources: { ...resources, hugepageLimits: [{ pageSize: '2MB', limit: '1024' }] }, securityContext: null } })), UnimplementedError);
    assert.throws(() => plan(containerConfig({ linux: { resources: { ...resources, unified: { 'memory.high': '1' } }, securityContext: null } })), /unified/);
    assert.throws(() => plan(containerConfig({ linux: { resources: { ...resources, cpuShares: 'lots' }, securityContext: null } })), /cpu_shares/);
    assert.throws(() => plan(containerConfig({ linux: { resources: { ...resources, cpusetCpus: '0-;' }, securityContext: null } })), /cpuset_cpus/);
  });

  it('refuses missing and malformed fields, naming them', () => {
    assert.throws(() => buildCreatePlan({ sandboxId: SANDBOX, config: null, sandboxConfig: sandboxConfig(), cgroupDriver: 'cgroupfs', host, engine: DOCKER_20 }), /^InvalidArgumentError: config is required/);
    assert.throws(() => plan(containerConfig({ metadata: null })), /config.metadata is required/);
    assert.throws(() => plan(containerConfig({ metadata: { name: '', attempt: 0 } })), /config.metadata.name is required/);
    assert.throws(() => plan(containerConfig({ metadata: { name: 'a_b', attempt: 0 } })), /config.metadata.name/);
    assert.throws(() => plan(containerConfig({ image: null })), /config.image.image is required/);
    assert.throws(() => plan(containerConfig({ logPath: '../../etc/passwd' })), /config.log_path/);
    assert.throws(() => plan(containerConfig({ logPath: '/abs.log' })), /config.log_path/);
    assert.throws(() => plan(containerConfig({ logPath: 'a.log' }), sandboxConfig({ logDirectory: '' })), /log_directory/);
    assert.throws(() => plan(containerConfig({ CDIDevices: [{ name: 'vendor.com/gpu=0' }] })), /config.CDI_devices: this Docker does not inject CDI devices/);
    assert.equal(logPathOf('/var/log/pods/x', ''), '');
  });

  it('maps stop signals both ways, reading the names of CRI v1.37 (SIGNAL_ prefix) and before', () => {
    const { spec } = plan(containerConfig({ stopSignal: 'SIGNAL_SIGUSR1' }));
    assert.equal(spec.StopSignal, 'SIGUSR1');
    assert.equal(plan(containerConfig()).spec.StopSignal, undefined);
    for (const prefix of ['', 'SIGNAL_']) {
      assert.equal(dockerStopSignal(`${prefix}SIGTERM`), 'SIGTERM');
      assert.equal(dockerStopSignal(`${prefix}SIGRTMINPLUS3`), 'SIGRTMIN+3');
      assert.equal(dockerStopSignal(`${prefix}SIGRTMAXMINUS2`), 'SIGRTMAX-2');
      assert.equal(dockerStopSignal(`${prefix}RUNTIME_DEFAULT`), undefined);
    }
    // Answers use the names of the proto served, which encode as the same numbers as before.
    assert.equal(criSignal('SIGRTMIN+3'), 'SIGNAL_SIGRTMINPLUS3');
    assert.equal(criSignal('TERM'), 'SIGNAL_SIGTERM');
    assert.equal(criSignal('SIGNOPE'), 'SIGNAL_RUNTIME_DEFAULT');
    assert.equal(criSignal(''), 'SIGNAL_RUNTIME_DEFAULT');
  });
});

describe('container mounts and devices', () => {
  it('writes binds with read-only, relabel and propagation options (API 1.41)', () => {
    const { binds, mounts } = toDockerMounts('config.mounts', [
      mount(),
      mount({ readonly: true, selinuxRelabel: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER' }),
      mount({ propagation: 'PROPAGATION_BIDIRECTIONAL', hostPath: '/srv/link' }),
      mount({ readonly: true }),
    ], host.resolvePath, DOCKER_20);
    assert.deepEqual(binds, ['/srv/data:/data', '/srv/data:/data:ro,Z,rslave', '/srv/target:/data:rshared', '/srv/data:/data:ro']);
    assert.deepEqual(mounts, []);
  });

  it('with bind options (API 1.44), says of each read-only mount whether it is recursive, and makes its mount point', () => {
    const { binds, mounts } = toDockerMounts('config.mounts', [
      mount(),
      mount({ readonly: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER', hostPath: '/srv/link' }),
      mount({ readonly: true, recursiveReadOnly: true }),
      mount({ readonly: true, selinuxRelabel: true }),
    ], host.resolvePath, DOCKER_28);
    assert.deepEqual(binds, ['/srv/data:/data', '/srv/data:/data:ro,Z'], 'writable and relabelled mounts stay binds');
    assert.deepEqual(mounts, [
      { Type: 'bind', Source: '/srv/target', Target: '/data', ReadOnly: true, BindOptions: { Propagation: 'rslave', CreateMountpoint: true, ReadOnlyNonRecursive: true } },
      { Type: 'bind', Source: '/srv/data', Target: '/data', ReadOnly: true, BindOptions: { CreateMountpoint: true, ReadOnlyForceRecursive: true } },
    ]);
  });

  it('knows the engine: bind options from API 1.44, recursive read-only where the kernel has mount_setattr (5.12), image mounts from 1.48, CDI where its info names spec dirs', () => {
    const f = (api: string, kernel: string | undefined, cdi?: string[] | null) => engineFeatures(api, kernel, cdi === undefined ? {} : { CDISpecDirs: cdi });
    assert.deepEqual(f('1.41', '6.1.0'), { bindOptions: false, recursiveReadOnlyMounts: false, imageMounts: false, imageSubpaths: false, cdi: false, selinux: false });
    assert.deepEqual(f('1.43', '6.1.0'), { bindOptions: false, recursiveReadOnlyMounts: false, imageMounts: false, imageSubpaths: false, cdi: false, selinux: false });
    assert.deepEqual(f('1.44', '5.12.0'), { bindOptions: true, recursiveReadOnlyMounts: true, imageMounts: false, imageSubpaths: false, cdi: false, selinux: false });
    assert.deepEqual(f('1.51', '5.11.9-x', ['/etc/cdi']), { bindOptions: true, recursiveReadOnlyMounts: false, imageMounts: true, imageSubpaths: true, cdi: true, selinux: false });
    assert.deepEqual(f('1.48', undefined, null), { bindOptions: true, recursiveReadOnlyMounts: false, imageMounts: true, imageSubpaths: false, cdi: false, selinux: false });
    assert.equal(f('1.45', '4.19.0', []).cdi, false, 'CDI off: no spec dirs');
    assert.equal(engineFeatures('1.51', '6.1.0', { SecurityOptions: ['name=apparmor', 'name=selinux', 'name=seccomp,profile=builtin'] }).selinux, true);
    assert.equal(engineFeatures('1.51', '6.1.0', { SecurityOptions: ['name=seccomp,profile=builtin', 'name=cgroupns'] }).selinux, false);
  });

  it('mounts an image (kubelet\'s image volumes) read-only where the engine can, a path inside it from API 1.49', () => {
    const image = (over: Partial<Mount__Output> = {}): Mount__Output => mount({ hostPath: '', containerPath: '/models', image: { image: 'sha256:abc', annotations: {}, userSpecifiedImage: '', runtimeHandler: '', imageRef: '' }, readonly: true, ...over });
    assert.deepEqual(toDockerMounts('config.mounts', [image(), image({ imageSubPath: 'data/v1' })], host.resolvePath, DOCKER_28).mounts, [
      { Type: 'image', Source: 'sha256:abc', Target: '/models', ReadOnly: true },
      { Type: 'image', Source: 'sha256:abc', Target: '/models', ReadOnly: true, ImageOptions: { Subpath: 'data/v1' } },
    ]);
    const invalid = (re: RegExp) => (e: unknown) => e instanceof InvalidArgumentError && re.test(e.message);
    assert.throws(() => toDockerMounts('config.mounts', [image()], host.resolvePath, DOCKER_20), invalid(/cannot mount an image \(it needs API 1.48, Docker 28\)/));
    assert.throws(() => toDockerMounts('config.mounts', [image({ imageSubPath: 'x' })], host.resolvePath, engineFeatures('1.48', '6.1.0')), invalid(/needs API 1.49/));
    for (const bad of ['/etc', '../x', 'a/../../b']) {
      assert.throws(() => toDockerMounts('config.mounts', [image({ imageSubPath: bad })], host.resolvePath, DOCKER_28), invalid(/relative and without '\.\.'/), bad);
    }
  });

  it('asks Docker\'s cdi driver for CDI devices where the engine has CDI on, and refuses names that are not CDI\'s', () => {
    const cdi = (names: string[]) => names.map((name) => ({ name }));
    assert.deepEqual(toCdiDeviceRequests('config.CDI_devices', cdi(['vendor.com/gpu=0', 'example.com/class=dev-1']), DOCKER_28), [{ Driver: 'cdi', DeviceIDs: ['vendor.com/gpu=0', 'example.com/class=dev-1'] }]);
    assert.deepEqual(toCdiDeviceRequests('config.CDI_devices', [], DOCKER_20), [], 'none asked, none needed');
    assert.throws(() => toCdiDeviceRequests('config.CDI_devices', cdi(['vendor.com/gpu=0']), DOCKER_20), (e: unknown) => e instanceof InvalidArgumentError && /CDI is off/.test(e.message));
    for (const bad of ['gpu0', 'vendor.com/gpu', '/gpu=0', 'vendor.com/gpu=0;rm']) {
      assert.throws(() => toCdiDeviceRequests('config.CDI_devices', cdi([bad]), DOCKER_28), (e: unknown) => e instanceof InvalidArgumentError && /not a CDI device name/.test(e.message), bad);
    }
  });

  it('asks for no relabelling where the engine has no SELinux labelling, so read-only mounts still say whether they are recursive', () => {
    const { binds, mounts } = toDockerMounts('config.mounts', [
      mount({ selinuxRelabel: true }),
      mount({ readonly: true, selinuxRelabel: true }),
      mount({ readonly: true, recursiveReadOnly: true, selinuxRelabel: true }),
    ], host.resolvePath, NO_SELINUX_28);
    assert.deepEqual(binds, ['/srv/data:/data']);
    assert.deepEqual(mounts, [
      { Type: 'bind', Source: '/srv/data', Target: '/data', ReadOnly: true, BindOptions: { CreateMountpoint: true, ReadOnlyNonRecursive: true } },
      { Type: 'bind', Source: '/srv/data', Target: '/data', ReadOnly: true, BindOptions: { CreateMountpoint: true, ReadOnlyForceRecursive: true } },
    ]);
    assert.deepEqual(toDockerMounts('config.mounts', [mount({ readonly: true, selinuxRelabel: true })], host.resolvePath, { ...DOCKER_20, selinux: false }).binds, ['/srv/data:/data:ro']);
  });

  it('applies the mount_options (CRI v1.37) Docker has as the fields they restate, and refuses noexec, nosuid, nodev and the rest naming the option', () => {
    const options = (mountOptions: string[], over: Partial<Mount__Output> = {}) => mount({ mountOptions, ...over });
    const applied = toDockerMounts('config.mounts', [
      options(['rbind']),
      options(['ro']),
      options(['rw', 'rslave']),
      options(['rshared'], { propagation: 'PROPAGATION_BIDIRECTIONAL' }),
      options(['rprivate', 'ro'], { readonly: true }),
    ], host.resolvePath, DOCKER_20);
    assert.deepEqual(applied.binds, ['/srv/data:/data', '/srv/data:/data:ro', '/srv/data:/data:rslave', '/srv/data:/data:rshared', '/srv/data:/data:ro']);
    // rro is recursive_read_only, with its needs: an engine that can, private propagation.
    assert.deepEqual(toDockerMounts('config.mounts', [options(['rro'])], host.resolvePath, DOCKER_28).mounts, [
      { Type: 'bind', Source: '/srv/data', Target: '/data', ReadOnly: true, BindOptions: { CreateMountpoint: true, ReadOnlyForceRecursive: true } },
    ]);
    assert.throws(() => toDockerMounts('config.mounts', [options(['rro'])], host.resolvePath, DOCKER_20), /recursive_read_only: this Docker cannot/);
    const refused = (m: Mount__Output, re: RegExp, engine = DOCKER_28) =>
      assert.throws(() => toDockerMounts('config.mounts', [mount(), m], host.resolvePath, engine), (e: unknown) => e instanceof InvalidArgumentError && re.test(e.message), re.source);
    for (const engine of [DOCKER_20, DOCKER_28]) {
      for (const option of ['noexec', 'nosuid', 'nodev']) {
        refused(options(['ro', option]), new RegExp(`^config\\.mounts\\[1\\]\\.mount_options\\[1\\]: Docker cannot apply "${option}" to a bind mount`), engine);
      }
    }
    refused(options(['bind']), /mount_options\[0\]: Docker cannot apply "bind"/);
    refused(options(['exec']), /mount_options\[0\]: Docker cannot apply "exec"/);
    // Names an object has of its own are not options.
    refused(options(['constructor']), /mount_options\[0\]: Docker cannot apply "constructor"/);
    refused(options(['rw'], { readonly: true }), /mount_options\[0\]: "rw" makes the mount both writable \(rw\) and read-only/);
    refused(options(['rw', 'ro']), /mount_options\[1\]: "ro" makes the mount both writable/);
    refused(options(['rslave'], { propagation: 'PROPAGATION_BIDIRECTIONAL' }), /mount_options\[0\]: "rslave" contradicts the mount's other propagation/);
    refused(options(['rshared', 'rprivate']), /mount_options\[1\]: "rprivate" contradicts/);
  });

  it('refuses empty, relative and unsupported mounts, and the combinations the CRI forbids', () => {
    const bind = (m: Partial<Mount__Output>, engine = DOCKER_28) => () => toDockerMounts('config.mounts', [mount(m)], host.resolvePath, engine);
    assert.throws(bind({ hostPath: '' }), /config.mounts\[0\].host_path is required/);
    assert.throws(bind({ containerPath: 'rel' }), /config.mounts\[0\].container_path: "rel" must be an absolute path/);
    assert.throws(bind({ hostPath: '/a:b' }), /host_path/);
    const invalid = (re: RegExp) => (e: unknown) => e instanceof InvalidArgumentError && re.test(e.message);
    assert.throws(bind({ readonly: true, recursiveReadOnly: true }, DOCKER_20), invalid(/cannot make recursively read-only mounts \(it needs API 1.44 and Linux 5.12\)/));
    assert.throws(bind({ recursiveReadOnly: true }), invalid(/recursive_read_only needs readonly/));
    assert.throws(bind({ readonly: true, recursiveReadOnly: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER' }), invalid(/needs private propagation/));
    assert.throws(bind({ readonly: true, recursiveReadOnly: true, selinuxRelabel: true }), invalid(/relabel/));
    assert.doesNotThrow(bind({ readonly: true, recursiveReadOnly: true, selinuxRelabel: true }, NO_SELINUX_28), 'no labelling to refuse without SELinux');
    assert.throws(bind({ uidMappings: [{ hostId: 1, containerId: 0, length: 1 }] }), UnimplementedError);
  });

  it('maps devices with their permissions', () => {
    assert.deepEqual(toDockerDevices('config.devices', [{ hostPath: '/dev/null', containerPath: '/dev/x', permissions: 'r' }, { hostPath: '/dev/zero', containerPath: '/dev/z', permissions: '' }]), [
      { PathOnHost: '/dev/null', PathInContainer: '/dev/x', CgroupPermissions: 'r' },
      { PathOnHost: '/dev/zero', PathInContainer: '/dev/z', CgroupPermissions: 'rwm' },
    ]);
    assert.throws(() => toDockerDevices('config.devices', [{ hostPath: '/dev/null', containerPath: '/dev/x', permissions: 'rx' }]), /config.devices\[0\].permissions/);
  });
});

describe('container security context', () => {
  const t = (over: Partial<LinuxContainerSecurityContext__Output>) => translateSecurityContext('sc', securityContext(over), host);

  it('normalizes capabilities and refuses unknown ones', () => {
    const r = t({ capabilities: { addCapabilities: ['net_admin', 'CAP_SYS_TIME'], dropCapabilities: ['ALL'], addAmbientCapabilities: [] } });
    assert.deepEqual([r.capAdd, r.capDrop], [['CAP_NET_ADMIN', 'CAP_SYS_TIME'], ['ALL']]);
    assert.throws(() => t({ capabilities: { addCapabilities: ['FLY'], dropCapabilities: [], addAmbientCapabilities: [] } }), /sc.capabilities.add_capabilities: unknown capability "FLY"/);
    assert.throws(() => t({ capabilities: { addCapabilities: [], dropCapabilities: [], addAmbientCapabilities: ['NET_RAW'] } }), UnimplementedError);
  });

  it('builds the user from uid, name and group', () => {
    assert.equal(t({ runAsUser: { value: '1234' } }).user, '1234');
    assert.equal(t({ runAsUser: { value: '1234' }, runAsGroup: { value: '99' } }).user, '1234:99');
    assert.equal(t({ runAsUsername: 'tester', runAsGroup: { value: '5' } }).user, 'tester:5');
    assert.equal(t({}).user, '');
    assert.throws(() => t({ runAsGroup: { value: '5' } }), /run_as_group needs/);
    assert.throws(() => t({ runAsUser: { value: '-1' } }), /run_as_user/);
    assert.deepEqual(t({ supplementalGroups: ['10', '20'] }).groupAdd, ['10', '20']);
    // Docker refuses IDs past 2^31-1 only at start, with a 500 (UNKNOWN): refused here, naming the field.
    assert.equal(t({ runAsUser: { value: '2147483647' }, runAsGroup: { value: '2147483647' } }).user, '2147483647:2147483647');
    assert.throws(() => t({ runAsUser: { value: '2147483648' } }), /^InvalidArgumentError: sc\.run_as_user: "2147483648" is not a uid\/gid \(0\.\.2147483647\)$/);
    assert.throws(() => t({ runAsUser: { value: '1' }, runAsGroup: { value: '9223372036854775807' } }), /sc\.run_as_group: "9223372036854775807" is not a uid\/gid/);
    assert.throws(() => t({ supplementalGroups: ['10', '4294967295'] }), /sc\.supplemental_groups\[1\]: "4294967295" is not a uid\/gid/);
    assert.throws(() => t({ supplementalGroupsPolicy: 'Strict' }), UnimplementedError);
  });

  it('translates seccomp forms', () => {
    assert.deepEqual(t({}).securityOpt, ['seccomp=unconfined']);
    assert.deepEqual(t({ seccomp: { profileType: 'RuntimeDefault', localhostRef: '' } }).securityOpt, []);
    assert.deepEqual(t({ seccomp: { profileType: 'Unconfined', localhostRef: '' } }).securityOpt, ['seccomp=unconfined']);
    assert.deepEqual(t({ seccomp: { profileType: 'Localhost', localhostRef: '/profiles/deny-mkdir.json' } }).securityOpt, ['seccomp={"defaultAction":"SCMP_ACT_ALLOW"}']);
    assert.deepEqual(t({ seccompProfilePath: 'runtime/default' }).securityOpt, []);
    assert.deepEqual(t({ seccompProfilePath: 'localhost//profiles/deny-mkdir.json' }).securityOpt, ['seccomp={"defaultAction":"SCMP_ACT_ALLOW"}']);
    assert.throws(() => t({ seccompProfilePath: 'strange' }), /sc.seccomp_profile_path: "strange" is not unconfined, runtime\/default or localhost/);
    assert.throws(() => t({ seccomp: { profileType: 'Localhost', localhostRef: '/profiles/missing.json' } }), (e: unknown) => e instanceof InvalidArgumentError && /sc.seccomp.localhost_ref: cannot read/.test(e.message));
    assert.throws(() => t({ seccomp: { profileType: 'Localhost', localhostRef: '/profiles/bad.json' } }), /not JSON/);
    assert.throws(() => t({ seccomp: { profileType: 'Localhost', localhostRef: 'rel.json' } }), /absolute/);
    assert.deepEqual(t({ privileged: true }).securityOpt, [], 'privileged containers get no seccomp or AppArmor option');
    assert.equal(t({ privileged: true }).privileged, true);
    const { spec } = plan(containerConfig({ linux: { resources: null, securityContext: securityContext({ privileged: true, readonlyRootfs: true, runAsUser: { value: '7' } }) } }));
    assert.deepEqual([spec.HostConfig?.Privileged, spec.HostConfig?.ReadonlyRootfs, spec.User], [true, true, '7']);
  });

  it('translates AppArmor forms, SELinux, no_new_privs and paths', () => {
    const seccompDefault = { seccomp: { profileType: 'RuntimeDefault' as const, localhostRef: '' } };
    assert.deepEqual(t({ ...seccompDefault, apparmor: { profileType: 'Unconfined', localhostRef: '' } }).securityOpt, ['apparmor=unconfined']);
    assert.deepEqual(t({ ...seccompDefault, apparmor: { profileType: 'Localhost', localhostRef: 'localhost/my-prof' } }).securityOpt, ['apparmor=my-prof']);
    assert.deepEqual(t({ ...seccompDefault, apparmorProfile: 'localhost/p2' }).securityOpt, ['apparmor=p2']);
    assert.deepEqual(t({ ...seccompDefault, apparmorProfile: 'runtime/default' }).securityOpt, []);
    assert.throws(() => t({ apparmorProfile: 'weird' }), /sc.apparmor_profile: unknown profile/);
    assert.throws(() => t({ apparmor: { profileType: 'Localhost', localhostRef: '' } }), /localhost_ref is required/);
    const r = t({ ...seccompDefault, noNewPrivs: true, readonlyRootfs: true, selinuxOptions: { user: 'u', role: 'r', type: 't', level: 's0' }, maskedPaths: ['/proc/kcore'], readonlyPaths: ['/proc/sys'] });
    assert.deepEqual(r.securityOpt, ['label=user:u', 'label=role:r', 'label=type:t', 'label=level:s0', 'no-new-privileges']);
    assert.deepEqual([r.readonlyRootfs, r.maskedPaths, r.readonlyPaths], [true, ['/proc/kcore'], ['/proc/sys']]);
    assert.equal(t({}).maskedPaths, undefined, 'no masked paths leaves Docker its defaults');
    assert.throws(() => t({ maskedPaths: ['proc'] }), /sc.masked_paths/);
  });
});
