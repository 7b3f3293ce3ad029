// RunPodSandbox request checking and the resulting Docker create request, without Docker.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { PodSandboxConfig__Output, RunPodSandboxRequest__Output } from '../../../../src/cri/types';
import { InvalidArgumentError, UnimplementedError } from '../../../../src/errors';
import { PAUSE_OOM_SCORE_ADJ, portSpec, SANDBOX_SHM_SIZE_BYTES, sandboxCreateSpec, type SandboxCreateInputs } from '../../../../src/translate/to-docker/sandbox-create-spec';
import { planSandbox, type SandboxPlan } from '../../../../src/translate/to-docker/sandbox-plan';
import { checkResources } from '../../../../src/translate/to-docker/linux-resources';
import type { HostFiles } from '../../../../src/translate/to-docker/security-options';
import { linuxResources } from '../../../support/fixtures/cri';

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object | null ? DeepPartial<NonNullable<T[K]>> | null : T[K] };

/** A request as the proto loader would hand it over (defaults filled in), with `over` applied. */
function request(over: DeepPartial<PodSandboxConfig__Output> = {}, runtimeHandler = ''): RunPodSandboxRequest__Output {
  const config = {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-1', attempt: 1 },
    hostname: '',
    logDirectory: '',
    dnsConfig: null,
    portMappings: [],
    labels: {},
    annotations: {},
    linux: null,
    windows: null,
    ...over,
  } as PodSandboxConfig__Output;
  return { config, runtimeHandler };
}


const nsOptions = (over: Record<string, unknown>) => ({ network: 'POD', pid: 'CONTAINER', ipc: 'POD', targetId: '', usernsOptions: null, ...over });

const securityContext = (over: Record<string, unknown>) => ({
  namespaceOptions: null,
  selinuxOptions: null,
  runAsUser: null,
  readonlyRootfs: false,
  supplementalGroups: [],
  privileged: false,
  seccompProfilePath: '',
  runAsGroup: null,
  seccomp: null,
  apparmor: null,
  supplementalGroupsPolicy: 'Merge',
  ...over,
});

const linux = (over: Record<string, unknown>) => ({ cgroupParent: '', securityContext: null, sysctls: {}, overhead: null, resources: null, ...over });

function invalid(req: RunPodSandboxRequest__Output, pattern: RegExp): void {
  assert.throws(
    () => planSandbox(req),
    (err: unknown) => err instanceof InvalidArgumentError && pattern.test(err.message),
  );
}

const inputs: SandboxCreateInputs = { image: 'pause:test', cgroupDriver: 'cgroupfs', dockerRuntime: undefined, networkMode: undefined };

/** A host with one seccomp profile file on it. */
const profiles: HostFiles = {
  readText(p) {
    if (p === '/p/s.json') return '{"defaultAction":"SCMP_ACT_ALLOW"}';
    throw Object.assign(new Error('missing'), { code: 'ENOENT' });
  },
};

describe('planSandbox', () => {
  it('accepts a minimal request with the defaults kubelet relies on', () => {
    const plan = planSandbox(request());
    assert.deepEqual(plan.metadata, { name: 'web', namespace: 'default', uid: 'uid-1', attempt: 1 });
    assert.equal(plan.hostNetwork, false);
    assert.deepEqual(plan.security.securityOpt, ['seccomp=unconfined']);
    assert.equal(plan.dns, undefined);
  });

  it('names the missing field', () => {
    invalid({ config: null, runtimeHandler: '' }, /^config is required$/);
    invalid(request({ metadata: null }), /^config\.metadata is required$/);
    invalid(request({ metadata: { name: '', namespace: 'd', uid: 'u', attempt: 0 } }), /^config\.metadata\.name is required$/);
    invalid(request({ metadata: { name: 'n', namespace: '', uid: 'u', attempt: 0 } }), /^config\.metadata\.namespace is required$/);
    invalid(request({ metadata: { name: 'n', namespace: 'd', uid: '', attempt: 0 } }), /^config\.metadata\.uid is required$/);
    invalid(request({ metadata: { name: 'n/../x', namespace: 'd', uid: 'u', attempt: 0 } }), /config\.metadata\.name/);
  });

  it('checks DNS servers, searches and options', () => {
    const dns = (d: Record<string, string[]>) => request({ dnsConfig: { servers: [], searches: [], options: [], ...d } });
    assert.deepEqual(planSandbox(dns({ servers: ['10.0.0.10', 'fd00::a'], options: ['ndots:5', 'rotate'] })).dns, {
      servers: ['10.0.0.10', 'fd00::a'],
      searches: [],
      options: ['ndots:5', 'rotate'],
    });
    invalid(dns({ servers: ['10.0.0.300'] }), /dns_config\.servers\[0\]/);
    invalid(dns({ searches: ['a b'] }), /dns_config\.searches\[0\]/);
    invalid(dns({ searches: Array.from({ length: 33 }, (_, i) => `d${i}.example`) }), /dns_config\.searches: 33 domains/);
    invalid(dns({ options: ['ndots:5', ''] }), /dns_config\.options\[1\]/);
    invalid(dns({ options: ['ndots: 5'] }), /dns_config\.options\[0\]/);
  });

  it('checks port mappings', () => {
    const ports = (p: Array<Record<string, unknown>>) =>
      request({ portMappings: p.map((m) => ({ protocol: 'TCP', containerPort: 80, hostPort: 0, hostIp: '', ...m })) as never });
    invalid(ports([{ containerPort: 70000 }]), /port_mappings\[0\]\.container_port/);
    invalid(ports([{ hostPort: -1 }]), /port_mappings\[0\]\.host_port/);
    invalid(ports([{ hostIp: 'localhost' }]), /port_mappings\[0\]\.host_ip/);
    invalid(ports([{ hostPort: 8080 }, { containerPort: 81, hostPort: 8080 }]), /port_mappings\[1\]\.host_port: 8080\/TCP is already mapped by port_mappings\[0\]/);
    // the same host port for TCP and UDP is fine
    assert.equal(planSandbox(ports([{ hostPort: 53 }, { hostPort: 53, protocol: 'UDP' }])).portMappings.length, 2);
  });

  it('checks sysctls: shape, namespacing, and conflicts with host namespaces', () => {
    const withSysctls = (sysctls: Record<string, string>, ns: Record<string, unknown> | null = null) =>
      request({ linux: linux({ sysctls, securityContext: ns ? securityContext({ namespaceOptions: nsOptions(ns) }) : null }) as never });
    assert.deepEqual(planSandbox(withSysctls({ 'net/ipv4/conf/eth0.100/rp_filter': '1', 'kernel.shm_rmid_forced': '1' })).sysctls, {
      'net.ipv4.conf.eth0/100.rp_filter': '1',
      'kernel.shm_rmid_forced': '1',
    });
    invalid(withSysctls({ 'Net.ipv4.x': '1' }), /sysctls\["Net\.ipv4\.x"\]: not a valid sysctl name/);
    invalid(withSysctls({ 'kernel.hostname': 'x' }), /not a namespaced sysctl/);
    invalid(withSysctls({ 'net.core.somaxconn': '' }), /value "" is not a sysctl value/);
    invalid(withSysctls({ 'net.core.somaxconn': '1024' }, { network: 'NODE' }), /conflicts with the host network namespace/);
    invalid(withSysctls({ 'fs.mqueue.msg_max': '20' }, { ipc: 'NODE' }), /conflicts with the host IPC namespace/);
  });

  it('checks namespace options', () => {
    const ns = (o: Record<string, unknown>) => request({ linux: linux({ securityContext: securityContext({ namespaceOptions: nsOptions(o) }) }) as never });
    const host = planSandbox(ns({ network: 'NODE', pid: 'NODE', ipc: 'NODE' }));
    assert.deepEqual([host.hostNetwork, host.hostPid, host.hostIpc], [true, true, true]);
    invalid(ns({ network: 'TARGET' }), /namespace_options\.network: TARGET is only valid for a container/);
    invalid(ns({ targetId: 'abc' }), /namespace_options\.target_id/);
  });

  it('checks the security context', () => {
    const sc = (o: Record<string, unknown>) => request({ linux: linux({ securityContext: securityContext(o) }) as never });
    invalid(sc({ runAsGroup: { value: '10' } }), /run_as_group: needs run_as_user/);
    invalid(sc({ runAsUser: { value: '-1' } }), /run_as_user/);
    invalid(sc({ supplementalGroups: ['12', 'x'] }), /supplemental_groups\[1\]/);
    // Docker refuses IDs past 2^31-1 only when the pause container starts, with a 500 (UNKNOWN).
    invalid(sc({ runAsUser: { value: '2147483648' } }), /run_as_user: "2147483648" is not a uid\/gid \(0\.\.2147483647\)/);
    invalid(sc({ runAsUser: { value: '0' }, runAsGroup: { value: '4294967295' } }), /run_as_group: "4294967295" is not a uid\/gid/);
    invalid(sc({ supplementalGroups: ['12', '2147483648'] }), /supplemental_groups\[1\]: "2147483648"/);
    invalid(sc({ seccomp: { profileType: 'Localhost', localhostRef: 'relative.json' } }), /seccomp\.localhost_ref/);
    invalid(sc({ seccompProfilePath: 'localhost/../../etc/shadow' }), /seccomp_profile_path/);
    invalid(sc({ seccompProfilePath: 'bogus' }), /seccomp_profile_path/);
    assert.deepEqual(planSandbox(sc({ seccompProfilePath: 'runtime/default' })).security.securityOpt, []);
    assert.deepEqual(planSandbox(sc({ seccomp: { profileType: 'Localhost', localhostRef: '/p/s.json' } }), profiles).security.securityOpt, [
      'seccomp={"defaultAction":"SCMP_ACT_ALLOW"}',
    ]);
    assert.throws(
      () => planSandbox(sc({ seccomp: { profileType: 'Localhost', localhostRef: '/p/absent.json' } }), profiles),
      (e: unknown) => e instanceof InvalidArgumentError && /seccomp\.localhost_ref: cannot read seccomp profile "\/p\/absent\.json": ENOENT/.test(e.message),
    );
  });

  it('refuses labels that would collide with the runtime’s own', () => {
    invalid(request({ labels: { 'io.kubernetes.sandbox.id': 'x' } }), /config\.labels.*reserved/);
    invalid(request({ labels: { 'annotation.foo': 'x' } }), /config\.labels.*annotation\./);
  });

  it('checks the runtime handler, hostname and cgroup parent', () => {
    invalid(request({}, 'bad handler'), /^runtime_handler/);
    invalid(request({ hostname: '-bad' }), /config\.hostname/);
    invalid(request({ hostname: 'a'.repeat(65) }), /config\.hostname/);
    invalid(request({ linux: linux({ cgroupParent: 'kubepods/../..' }) as never }), /config\.linux\.cgroup_parent/);
    assert.equal(planSandbox(request({ linux: linux({ cgroupParent: 'kubepods-besteffort.slice' }) as never })).cgroupParent, 'kubepods-besteffort.slice');
  });
});

describe('user namespaces', () => {
  it('refuses a pod user namespace as something Docker cannot do', () => {
    const withUserns = request({ linux: linux({ securityContext: securityContext({ namespaceOptions: nsOptions({ usernsOptions: { mode: 'POD', uids: [], gids: [] } }) }) }) as never });
    assert.throws(() => planSandbox(withUserns), (e: unknown) => e instanceof UnimplementedError && /userns_options: Docker cannot give a pod its own user namespace/.test(e.message));
    const nodeUserns = request({ linux: linux({ securityContext: securityContext({ namespaceOptions: nsOptions({ usernsOptions: { mode: 'NODE', uids: [], gids: [] } }) }) }) as never });
    assert.equal(planSandbox(nodeUserns).hostNetwork, false);
  });
});

describe('checkResources', () => {
  it('maps what Docker can carry and lists what it cannot', () => {
    const r = checkResources(
      'r',
      linuxResources({ cpuShares: '512', cpuQuota: '50000', cpuPeriod: '100000', memoryLimitInBytes: '134217728', cpusetCpus: '0-1', unified: { 'memory.high': '1' } }),
    );
    assert.deepEqual(r.docker, { CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000, Memory: 134217728, MemorySwap: 134217728, CpusetCpus: '0-1' });
    assert.deepEqual(r.unsupported, ['unified']);
  });

  it('rejects negative and absurd values, naming the field', () => {
    const bad = (over: Record<string, unknown>, pattern: RegExp) =>
      assert.throws(() => checkResources('config.linux.resources', linuxResources(over)), (e: unknown) => e instanceof InvalidArgumentError && pattern.test(e.message));
    bad({ cpuShares: '-1' }, /cpu_shares: -1 is outside/);
    bad({ cpuPeriod: '10' }, /cpu_period/);
    bad({ cpuQuota: '-5' }, /cpu_quota/);
    bad({ memoryLimitInBytes: '1e9' }, /memory_limit_in_bytes: "1e9" is not an integer/);
    bad({ memoryLimitInBytes: '100' }, /memory_limit_in_bytes: 100 is outside/);
    bad({ memoryLimitInBytes: '134217728', memorySwapLimitInBytes: '1000' }, /memory_swap_limit_in_bytes.*below/);
    bad({ oomScoreAdj: '2000' }, /oom_score_adj/);
    bad({ cpusetCpus: '0-' }, /cpuset_cpus/);
    bad({ hugepageLimits: [{ pageSize: 'huge', limit: '1' }] }, /hugepage_limits\[0\]\.page_size/);
  });
});

describe('sandboxCreateSpec', () => {
  function spec(plan: SandboxPlan, over: Partial<SandboxCreateInputs> = {}) {
    return sandboxCreateSpec(plan, { ...inputs, ...over });
  }

  it('makes dockershim’s pause container: name, labels, IPC shareable, shm, oom score', () => {
    const plan = planSandbox(request({ labels: { app: 'web' }, annotations: { note: 'x' }, hostname: 'web-0' }));
    const s = spec(plan);
    assert.equal(s.name, 'k8s_POD_web_default_uid-1_1');
    assert.equal(s.Image, 'pause:test');
    assert.equal(s.Hostname, 'web-0');
    assert.deepEqual(s.Healthcheck, { Test: ['NONE'] }, "Docker's health check off");
    // The runtime handler is written when it is the default too, and every key the shim wrote is recorded.
    const own = ['annotation.note', 'app', 'io.kubernetes.cri-docker-shim.runtime-handler', 'io.kubernetes.docker.type'];
    assert.deepEqual(s.Labels, {
      app: 'web',
      'annotation.note': 'x',
      'io.kubernetes.docker.type': 'podsandbox',
      'io.kubernetes.cri-docker-shim.runtime-handler': '',
      'io.cri-docker-shim.own-labels': JSON.stringify({ name: 'k8s_POD_web_default_uid-1_1', keys: own }),
    });
    assert.equal(s.HostConfig?.IpcMode, 'shareable');
    assert.equal(s.HostConfig?.ShmSize, SANDBOX_SHM_SIZE_BYTES);
    assert.equal(s.HostConfig?.OomScoreAdj, PAUSE_OOM_SCORE_ADJ);
    assert.equal(s.HostConfig?.NetworkMode, undefined);
    assert.deepEqual(s.HostConfig?.SecurityOpt, ['seccomp=unconfined']);
  });

  it('uses the host namespaces when asked, without shm or port bindings', () => {
    const plan = planSandbox(
      request({
        portMappings: [{ protocol: 'TCP', containerPort: 80, hostPort: 80, hostIp: '' }],
        linux: linux({ securityContext: securityContext({ namespaceOptions: nsOptions({ network: 'NODE', pid: 'NODE', ipc: 'NODE' }) }) }) as never,
      }),
    );
    // The network manager chooses host mode for such a plan (see test/unit/network/network-manager.test.ts).
    const s = spec(plan, { networkMode: 'host' });
    assert.equal(s.HostConfig?.NetworkMode, 'host');
    assert.equal(s.HostConfig?.PidMode, 'host');
    assert.equal(s.HostConfig?.IpcMode, 'host');
    assert.equal(s.HostConfig?.ShmSize, undefined);
    assert.equal(s.HostConfig?.PortBindings, undefined);
  });

  it('leaves the namespace and the host ports to a network plugin that asks for mode none', () => {
    const plan = planSandbox(request({ portMappings: [{ protocol: 'TCP', containerPort: 80, hostPort: 8080, hostIp: '' }] }));
    const s = spec(plan, { networkMode: 'none' });
    assert.equal(s.HostConfig?.NetworkMode, 'none');
    assert.equal(s.HostConfig?.PortBindings, undefined);
    assert.deepEqual(s.ExposedPorts, { '80/tcp': {} });
  });

  it('publishes port mappings, several host ports per container port, hostPort 0 exposed only', () => {
    const plan = planSandbox(
      request({
        portMappings: [
          { protocol: 'TCP', containerPort: 80, hostPort: 8080, hostIp: '' },
          { protocol: 'TCP', containerPort: 80, hostPort: 8081, hostIp: '127.0.0.1' },
          { protocol: 'UDP', containerPort: 53, hostPort: 5353, hostIp: '' },
          { protocol: 'SCTP', containerPort: 9, hostPort: 0, hostIp: '' },
        ],
      }),
    );
    assert.deepEqual(portSpec(plan), {
      exposed: { '80/tcp': {}, '53/udp': {}, '9/sctp': {} },
      bindings: {
        '80/tcp': [
          { HostIp: '', HostPort: '8080' },
          { HostIp: '127.0.0.1', HostPort: '8081' },
        ],
        '53/udp': [{ HostIp: '', HostPort: '5353' }],
      },
    });
  });

  it('carries DNS, sysctls, security context, cgroup parent (driver-converted), runtime and resources', () => {
    const plan = planSandbox(
      request(
        {
          dnsConfig: { servers: ['10.0.0.10'], searches: ['svc.local'], options: ['ndots:5'] },
          linux: linux({
            cgroupParent: '/kubepods/burstable/pod123',
            sysctls: { 'net.ipv4.ip_forward': '1' },
            resources: linuxResources({ cpuShares: '100' }),
            securityContext: securityContext({
              runAsUser: { value: '1000' },
              runAsGroup: { value: '2000' },
              readonlyRootfs: true,
              privileged: true,
              supplementalGroups: ['3000'],
              seccomp: { profileType: 'RuntimeDefault', localhostRef: '' },
              apparmor: { profileType: 'Localhost', localhostRef: 'my-profile' },
              selinuxOptions: { user: '', role: '', type: 'spc_t', level: 's0:c1,c2'.replace(',', '.') },
            }),
          }) as never,
        },
        'runc',
      ),
    );
    const s = spec(plan, { cgroupDriver: 'systemd', dockerRuntime: 'runc' });
    const h = s.HostConfig!;
    assert.deepEqual([h.Dns, h.DnsSearch, h.DnsOptions], [['10.0.0.10'], ['svc.local'], ['ndots:5']]);
    assert.deepEqual(h.Sysctls, { 'net.ipv4.ip_forward': '1' });
    assert.equal(s.User, '1000:2000');
    assert.equal(h.ReadonlyRootfs, true);
    assert.equal(h.Privileged, true);
    assert.deepEqual(h.GroupAdd, ['3000']);
    assert.deepEqual(h.SecurityOpt, ['apparmor=my-profile', 'label=type:spc_t', 'label=level:s0:c1.c2']);
    assert.equal(h.CgroupParent, 'kubepods-burstable-pod123.slice');
    assert.equal(h.Runtime, 'runc');
    assert.equal(h.CpuShares, 100);
    assert.equal(s.Labels?.['io.kubernetes.cri-docker-shim.runtime-handler'], 'runc');
  });

  it('passes a localhost seccomp profile’s text to Docker', () => {
    const plan = planSandbox(request({ linux: linux({ securityContext: securityContext({ seccomp: { profileType: 'Localhost', localhostRef: '/p/s.json' } }) }) as never }), profiles);
    assert.deepEqual(spec(plan).HostConfig?.SecurityOpt, [
      'seccomp={"defaultAction":"SCMP_ACT_ALLOW"}',
    ]);
  });
});
