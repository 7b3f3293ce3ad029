// Bad RunPodSandbox requests: each is INVALID_ARGUMENT naming the field, and leaves nothing
// behind (no container, no checkpoint). Also a failure after create (the pause container
// cannot start) is rolled back.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { status as Code } from '@grpc/grpc-js';
import type { PodSandboxConfig, RunPodSandboxRequest } from '../../src/cri/types';
import { rejectsWith } from '../support/client';
import { TEST_LABEL } from '../support/cleanup';
import { dockerApi } from '../support/images';
import { useShim } from '../support/fixture';
import { podConfig } from '../support/pods';

describe('RunPodSandbox with bad input', () => {
  const f = useShim();
  const { run } = f;

  async function assertNothingLeft(): Promise<void> {
    const left = await dockerApi().listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${run}`] } });
    assert.deepEqual(left.map((c) => c.Names[0]), [], 'no container left behind');
    const dir = path.join(f.shim.rootDir, 'sandbox');
    const files = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
    assert.deepEqual(files, [], 'no checkpoint left behind');
  }

  const linux = (l: NonNullable<PodSandboxConfig['linux']>): Partial<PodSandboxConfig> => ({ linux: l });
  const cases: Array<[string, RunPodSandboxRequest, RegExp]> = [
    ['missing config', {}, /^config is required$/],
    ['missing metadata', { config: { labels: { [TEST_LABEL]: run } } }, /config\.metadata is required/],
    ['missing name', { config: { ...podConfig(run), metadata: { namespace: 'ns', uid: 'u' } } }, /config\.metadata\.name is required/],
    ['missing namespace', { config: { ...podConfig(run), metadata: { name: 'n', uid: 'u' } } }, /config\.metadata\.namespace is required/],
    ['missing uid', { config: { ...podConfig(run), metadata: { name: 'n', namespace: 'ns' } } }, /config\.metadata\.uid is required/],
    ['a name Docker cannot carry', { config: { ...podConfig(run), metadata: { name: 'a_b', namespace: 'ns', uid: 'u' } } }, /config\.metadata\.name/],
    ['bad sysctl name', { config: podConfig(run, linux({ sysctls: { 'net..bad': '1' } })) }, /config\.linux\.sysctls\["net\.\.bad"\]/],
    ['non-namespaced sysctl', { config: podConfig(run, linux({ sysctls: { 'vm.swappiness': '1' } })) }, /vm\.swappiness.*not a namespaced sysctl/],
    [
      'net sysctl with host network',
      {
        config: podConfig(run, linux({ sysctls: { 'net.ipv4.ip_forward': '1' }, securityContext: { namespaceOptions: { network: 'NODE' } } })),
      },
      /net\.ipv4\.ip_forward.*conflicts with the host network/,
    ],
    [
      'TARGET namespace for a sandbox',
      { config: podConfig(run, linux({ securityContext: { namespaceOptions: { pid: 'TARGET', targetId: 'abc' } } })) },
      /namespace_options\.pid: TARGET/,
    ],
    [
      'target_id without TARGET',
      { config: podConfig(run, linux({ securityContext: { namespaceOptions: { targetId: 'abc' } } })) },
      /namespace_options\.target_id/,
    ],
    [
      'a uid Docker refuses only at start (UNKNOWN)',
      { config: podConfig(run, linux({ securityContext: { runAsUser: { value: '2147483648' } } })) },
      /config\.linux\.security_context\.run_as_user: "2147483648" is not a uid\/gid \(0\.\.2147483647\)/,
    ],
    [
      'a CPU quota past the kernel’s (UNKNOWN at start)',
      { config: podConfig(run, linux({ resources: { cpuPeriod: '100000', cpuQuota: '17592186044416' } })) },
      /config\.linux\.resources\.cpu_quota: 17592186044416 is outside 1000\.\.17592186044415 µs/,
    ],
    ['negative cpu shares', { config: podConfig(run, linux({ resources: { cpuShares: '-2' } })) }, /config\.linux\.resources\.cpu_shares/],
    ['absurd memory', { config: podConfig(run, linux({ resources: { memoryLimitInBytes: '99999999999999999999' } })) }, /memory_limit_in_bytes.*out of range/],
    ['tiny memory', { config: podConfig(run, linux({ overhead: { memoryLimitInBytes: '1024' } })) }, /config\.linux\.overhead\.memory_limit_in_bytes/],
    ['unknown runtime handler', { config: podConfig(run), runtimeHandler: 'no-such-runtime' }, /runtime_handler: "no-such-runtime" is not a Docker runtime/],
    ['malformed DNS option', { config: podConfig(run, { dnsConfig: { options: ['ndots 5'] } }) }, /config\.dns_config\.options\[0\]/],
    ['DNS server not an IP', { config: podConfig(run, { dnsConfig: { servers: ['dns.example.com'] } }) }, /config\.dns_config\.servers\[0\]/],
    ['bad hostname', { config: podConfig(run, { hostname: 'bad host' }) }, /config\.hostname/],
    ['bad port', { config: podConfig(run, { portMappings: [{ containerPort: 0, hostPort: 80 }] }) }, /config\.port_mappings\[0\]\.container_port/],
    ['reserved label', { config: podConfig(run, { labels: { 'io.kubernetes.docker.type': 'container' } }) }, /config\.labels.*reserved/],
    [
      'unreadable seccomp profile',
      { config: podConfig(run, linux({ securityContext: { seccomp: { profileType: 'Localhost', localhostRef: '/nonexistent/profile.json' } } })) },
      /config\.linux\.security_context\.seccomp.*ENOENT/,
    ],
    ['relative cgroup parent', { config: podConfig(run, linux({ cgroupParent: '../escape' })) }, /config\.linux\.cgroup_parent/],
  ];

  for (const [what, req, message] of cases) {
    it(`rejects ${what}`, async () => {
      await assert.rejects(f.client.runtime.RunPodSandbox(req), rejectsWith(Code.INVALID_ARGUMENT, message));
      await assertNothingLeft();
    });
  }

  it('rolls back when the pause container cannot start', async () => {
    // A sysctl value the kernel refuses passes every check and fails only at start.
    const config = podConfig(run, linux({ sysctls: { 'net.ipv4.ip_local_port_range': 'not numbers' } }));
    await assert.rejects(
      f.client.runtime.RunPodSandbox({ config }),
      rejectsWith(Code.UNKNOWN, /start container [0-9a-f]{64}: .*ip_local_port_range/),
    );
    await assertNothingLeft();
  });
});

describe('RunPodSandbox when the sandbox image cannot be had', () => {
  // A registry on a closed loopback port: the pull fails at once, without leaving the machine.
  const image = '127.0.0.1:1/cds-test/absent-pause:never';
  const f = useShim({ args: [`--pod-infra-container-image=${image}`] });
  const { run } = f;

  it('tries to pull it, fails naming it, and leaves nothing behind', async () => {
    await assert.rejects(f.client.runtime.RunPodSandbox({ config: podConfig(run) }), (err: { code?: number; details?: string }) => {
      assert.equal(err.code, Code.UNAVAILABLE, err.details);
      assert.match(err.details ?? '', /127\.0\.0\.1:1\/cds-test\/absent-pause:never.*the registry cannot be reached/);
      return true;
    });
    const left = await dockerApi().listContainers({ all: true, filters: { label: [`${TEST_LABEL}=${run}`] } });
    assert.equal(left.length, 0);
    assert.match(f.shim.output(), /pulling the sandbox image/);
  });
});
