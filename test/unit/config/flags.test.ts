import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { DEFAULT_DOCKER_ENDPOINT, DEFAULT_RUNTIME_ENDPOINT, FlagError, parseFlags, usage, type Config } from '../../../src/config/flags';

function run(argv: string[], env: NodeJS.ProcessEnv = {}): Config {
  const result = parseFlags(argv, env);
  assert.equal(result.kind, 'run');
  return (result as { config: Config }).config;
}

describe('parseFlags', () => {
  it('has the documented defaults', () => {
    const c = run([]);
    assert.equal(c.containerRuntimeEndpoint.url, DEFAULT_RUNTIME_ENDPOINT);
    assert.deepEqual(c.containerRuntimeEndpoint, { kind: 'unix', path: '/run/cri-docker-shim.sock', url: DEFAULT_RUNTIME_ENDPOINT });
    assert.equal(c.dockerEndpoint.url, DEFAULT_DOCKER_ENDPOINT);
    assert.equal(c.podInfraContainerImage, 'registry.k8s.io/pause:3.10');
    assert.equal(c.rootDirectory, '/var/lib/cri-docker-shim');
    assert.equal(c.networkPlugin, 'cni', 'cri-dockerd defaults to cni too');
    assert.deepEqual(c.cniBinDirs, ['/opt/cni/bin', '/usr/lib/cni']);
    assert.equal(c.cniConfDir, '/etc/cni/net.d');
    assert.equal(c.cniCacheDir, '/var/lib/cni/cache');
    assert.equal(c.networkPluginMtu, 0);
    assert.equal(c.hairpinMode, 'promiscuous-bridge');
    assert.equal(c.nonMasqueradeCidr, '10.0.0.0/8');
    assert.equal(c.cgroupDriver, undefined);
    assert.equal(c.streamingBindAddr, '127.0.0.1:0');
    assert.equal(c.metricsBindAddr, '', 'no metrics endpoint unless asked for');
    assert.equal(c.imagePullProgressDeadlineMs, 60_000);
    assert.equal(c.runtimeRequestTimeoutMs, 120_000);
    assert.equal(c.logLevel, 'info');
  });

  it('takes cri-dockerd flag names in both --flag=value and --flag value forms', () => {
    const c = run([
      '--container-runtime-endpoint=tcp://127.0.0.1:9000',
      '--docker-endpoint',
      'unix:///tmp/d.sock',
      '--cgroup-driver=systemd',
      '--cri-dockerd-root-directory=/srv/state',
      '--image-pull-progress-deadline=1m30s',
      '--runtime-request-timeout',
      '500ms',
      '--log-level=debug',
      '--pod-infra-container-image=example.com/pause:1',
      '--streaming-bind-addr=[::1]:10010',
      '--metrics-bind-addr=127.0.0.1:9101',
    ]);
    assert.deepEqual(c.containerRuntimeEndpoint, { kind: 'tcp', host: '127.0.0.1', port: 9000, url: 'tcp://127.0.0.1:9000' });
    assert.deepEqual(c.dockerEndpoint, { kind: 'unix', path: '/tmp/d.sock', url: 'unix:///tmp/d.sock' });
    assert.equal(c.cgroupDriver, 'systemd');
    assert.equal(c.rootDirectory, '/srv/state');
    assert.equal(c.imagePullProgressDeadlineMs, 90_000);
    assert.equal(c.runtimeRequestTimeoutMs, 500);
    assert.equal(c.logLevel, 'debug');
    assert.equal(c.podInfraContainerImage, 'example.com/pause:1');
    assert.equal(c.streamingBindAddr, '[::1]:10010');
    assert.equal(c.metricsBindAddr, '127.0.0.1:9101');
  });

  it('honours DOCKER_HOST unless --docker-endpoint is given', () => {
    assert.equal(run([], { DOCKER_HOST: 'tcp://10.0.0.1:2375' }).dockerEndpoint.url, 'tcp://10.0.0.1:2375');
    assert.equal(
      run(['--docker-endpoint=unix:///x.sock'], { DOCKER_HOST: 'tcp://10.0.0.1:2375' }).dockerEndpoint.url,
      'unix:///x.sock',
    );
  });

  it('takes the network flags: an empty plugin is Docker’s bridge; bin dirs are a list', () => {
    assert.equal(run(['--network-plugin=']).networkPlugin, 'noop');
    assert.equal(run(['--network-plugin=kubenet']).networkPlugin, 'kubenet');
    const c = run(['--cni-bin-dir=/a, /b', '--network-plugin-mtu=1450', '--hairpin-mode=hairpin-veth', '--non-masquerade-cidr=fd00::/8']);
    assert.deepEqual(c.cniBinDirs, ['/a', '/b']);
    assert.equal(c.networkPluginMtu, 1450);
    assert.equal(c.hairpinMode, 'hairpin-veth');
    assert.equal(c.nonMasqueradeCidr, 'fd00::/8');
  });

  it('answers --help and --version without a config', () => {
    assert.deepEqual(parseFlags(['--help'], {}), { kind: 'help' });
    assert.deepEqual(parseFlags(['--version'], {}), { kind: 'version' });
    assert.match(usage(), /--container-runtime-endpoint value/);
    assert.match(usage(), /--cri-dockerd-root-directory value/);
  });

  const bad: Array<[string[], RegExp]> = [
    [['--no-such-flag'], /no-such-flag/],
    [['--cgroup-driver=cgroupv3'], /--cgroup-driver: "cgroupv3" is not one of cgroupfs, systemd/],
    [['--log-level=loud'], /--log-level: "loud"/],
    [['--network-plugin=flannel'], /--network-plugin: "flannel"/],
    [['--image-pull-progress-deadline=soon'], /--image-pull-progress-deadline: "soon" is not a duration/],
    [['--runtime-request-timeout=0'], /--runtime-request-timeout: must be greater than 0/],
    // Past a timer's 2^31-1 ms a timer fires after 1 ms; the request timeout leaves a stop's grace room on top.
    [['--runtime-request-timeout=25h'], /--runtime-request-timeout: 25h is longer than 24h/],
    [['--image-pull-progress-deadline=597h'], /--image-pull-progress-deadline: 597h is longer than 596h31m23.647s/],
    [['--shutdown-grace-period=1000h'], /--shutdown-grace-period: 1000h is longer than 596h31m23.647s/],
    [['--container-runtime-endpoint=relative.sock'], /--container-runtime-endpoint: "relative.sock" is not/],
    [['--container-runtime-endpoint=tcp://host:99999'], /out of range/],
    [['--cri-dockerd-root-directory=state'], /must be an absolute path/],
    [['--streaming-bind-addr=localhost'], /--streaming-bind-addr: "localhost" is not host:port/],
    [['--streaming-bind-addr=127.0.0.1:70000'], /--streaming-bind-addr: "127.0.0.1:70000" is not host:port/],
    [['--metrics-bind-addr=9101'], /--metrics-bind-addr: "9101" is not host:port/],
    [['--metrics-bind-addr=http://127.0.0.1:9101'], /--metrics-bind-addr: "http:\/\/127.0.0.1:9101" is not host:port/],
    [['--pod-infra-container-image='], /must not be empty/],
    [['--network-plugin-mtu=9x'], /--network-plugin-mtu: "9x" must be 0/],
    [['--network-plugin-mtu=100'], /--network-plugin-mtu: "100" must be 0/],
    [['--hairpin-mode=sideways'], /--hairpin-mode: "sideways" is not one of promiscuous-bridge, hairpin-veth, none/],
    [['--non-masquerade-cidr=10.0.0.0'], /--non-masquerade-cidr: "10.0.0.0" is not a CIDR/],
    [['--cni-bin-dir=relative'], /--cni-bin-dir: "relative" must be an absolute path/],
    [['positional'], /positional/],
    [['--runtime-cgroups=system.slice/cri-docker.service'], /--runtime-cgroups: "system.slice\/cri-docker.service" must be an absolute cgroup path/],
    [['--runtime-cgroups=/system.slice/../docker'], /--runtime-cgroups: "\/system.slice\/..\/docker" must be an absolute cgroup path without \. or \.\./],
    [['--test-only-docker-daemon-pids=1,x'], /--test-only-docker-daemon-pids: "1,x" is not a list of PIDs/],
    [['--test-only-runtime-cgroups-root=tmp/cg'], /--test-only-runtime-cgroups-root: "tmp\/cg" must be an absolute path/],
  ];
  for (const [argv, message] of bad) {
    it(`refuses ${argv.join(' ')}`, () => {
      assert.throws(() => parseFlags(argv, {}), (err: unknown) => err instanceof FlagError && message.test(err.message));
    });
  }
});

describe('--config FILE', () => {
  const files: Record<string, string> = {
    '/etc/shim.yaml': [
      '# the same names as the flags',
      'network-plugin: kubenet',
      'network-plugin-mtu: 1450',
      'cni-bin-dir: [/opt/cni/bin, /usr/lib/cni]',
      'log-level: debug',
      'docker-endpoint: unix:///srv/docker.sock',
      'metrics-bind-addr: 127.0.0.1:9101',
      '',
    ].join('\n'),
    '/etc/empty.yaml': '',
    '/etc/unknown.yaml': 'network-plugin: cni\nnetwork_plugin: cni\n',
    '/etc/bad-value.yaml': 'hairpin-mode: sideways\n',
    '/etc/bad-metrics.yaml': 'metrics-bind-addr: 9101\n',
    '/etc/nested.yaml': 'cni-conf-dir:\n  path: /etc/cni\n',
    '/etc/list.yaml': 'log-level: [debug]\n',
    '/etc/null.yaml': 'log-level:\n',
    '/etc/help.yaml': 'help: true\n',
    '/etc/scalar.yaml': 'just text\n',
    '/etc/broken.yaml': 'log-level: [debug\n',
    '/etc/twice.yaml': 'log-level: debug\nlog-level: info\n',
  };
  const read = (file: string): string => {
    const text = files[file];
    if (text === undefined) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
    return text;
  };
  const withFile = (argv: string[], env: NodeJS.ProcessEnv = {}): Config => {
    const result = parseFlags(argv, env, read);
    assert.equal(result.kind, 'run');
    return (result as { config: Config }).config;
  };

  it('takes settings named as the flags, with a YAML list for a list flag', () => {
    const c = withFile(['--config=/etc/shim.yaml']);
    assert.equal(c.networkPlugin, 'kubenet');
    assert.equal(c.networkPluginMtu, 1450);
    assert.deepEqual(c.cniBinDirs, ['/opt/cni/bin', '/usr/lib/cni']);
    assert.equal(c.logLevel, 'debug');
    assert.equal(c.dockerEndpoint.url, 'unix:///srv/docker.sock');
    assert.equal(c.metricsBindAddr, '127.0.0.1:9101');
    assert.equal(c.hairpinMode, 'promiscuous-bridge', 'what the file leaves out keeps its default');
  });

  it('lets flags win over the file, and the file over DOCKER_HOST', () => {
    const c = withFile(['--log-level=warn', '--config', '/etc/shim.yaml', '--network-plugin='], { DOCKER_HOST: 'tcp://10.0.0.1:2375' });
    assert.equal(c.logLevel, 'warn');
    assert.equal(c.networkPlugin, 'noop');
    assert.equal(c.dockerEndpoint.url, 'unix:///srv/docker.sock');
    assert.equal(withFile(['--config=/etc/empty.yaml'], { DOCKER_HOST: 'tcp://10.0.0.1:2375' }).dockerEndpoint.url, 'tcp://10.0.0.1:2375');
  });

  it('accepts an empty file', () => {
    assert.equal(withFile(['--config=/etc/empty.yaml']).networkPlugin, 'cni');
  });

  const bad: Array<[string, RegExp]> = [
    ['/etc/missing.yaml', /^--config: cannot read "\/etc\/missing\.yaml": ENOENT$/],
    ['/etc/unknown.yaml', /^--config \/etc\/unknown\.yaml: unknown key "network_plugin"/],
    ['/etc/bad-value.yaml', /^hairpin-mode \(in \/etc\/bad-value\.yaml\): "sideways" is not one of/],
    ['/etc/bad-metrics.yaml', /^metrics-bind-addr \(in \/etc\/bad-metrics\.yaml\): "9101" is not host:port$/],
    ['/etc/nested.yaml', /cni-conf-dir must be a single value like the flag's, not a mapping/],
    ['/etc/list.yaml', /log-level must be a single value like the flag's, not a list/],
    ['/etc/null.yaml', /log-level has no value/],
    ['/etc/help.yaml', /"help" can only be given on the command line/],
    ['/etc/scalar.yaml', /must be a mapping of flag names to values/],
    ['/etc/broken.yaml', /^--config \/etc\/broken\.yaml: not valid YAML: /],
    ['/etc/twice.yaml', /not valid YAML: .*unique/i],
  ];
  for (const [file, message] of bad) {
    it(`refuses ${file} with a FlagError (exit 2)`, () => {
      assert.throws(() => parseFlags([`--config=${file}`], {}, read), (err: unknown) => err instanceof FlagError && message.test(err.message));
    });
  }

  it('names the flag, not the file, when a flag overrides a bad file value', () => {
    assert.throws(
      () => parseFlags(['--config=/etc/shim.yaml', '--network-plugin-mtu=9x'], {}, read),
      (err: unknown) => err instanceof FlagError && err.message.startsWith('--network-plugin-mtu: "9x"'),
    );
    assert.equal(withFile(['--config=/etc/bad-value.yaml', '--hairpin-mode=none']).hairpinMode, 'none');
  });
});

describe("cri-dockerd's flags", () => {
  /** Every flag cri-dockerd 0.3.x and 0.4.x register (cmd/server.go, cmd/cri/options, config/options.go). */
  const CRI_DOCKERD_FLAGS = [
    '--buildinfo=false',
    '--cni-bin-dir=/opt/cni/bin',
    '--cni-cache-dir=/var/lib/cni/cache',
    '--cni-conf-dir=/etc/cni/net.d',
    '--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock',
    '--cri-dockerd-root-directory=/var/lib/cri-dockerd',
    '--docker-endpoint=unix:///var/run/docker.sock',
    '--hairpin-mode=hairpin-veth',
    '--help=false',
    '--image-pull-progress-deadline=1m0s',
    '--ipv6-dual-stack',
    '--log-level=panic',
    '--network-plugin=kubenet',
    '--network-plugin-mtu=1460',
    '--pod-cidr=10.244.1.0/24,fd00:10:244:1::/64',
    '--pod-infra-container-image=registry.k8s.io/pause:3.10',
    '--runtime-cgroups=/system.slice/cri-docker.service',
    '--runtime-request-timeout=2m0s',
    '--streaming-bind-addr=0.0.0.0',
    '--version=false',
  ];

  it('accepts every one of them, each with its meaning', () => {
    const c = run(CRI_DOCKERD_FLAGS);
    assert.equal(c.rootDirectory, '/var/lib/cri-dockerd');
    assert.equal(c.hairpinMode, 'hairpin-veth');
    assert.equal(c.logLevel, 'fatal', "logrus's panic is above fatal");
    assert.deepEqual(c.podCidrs, ['10.244.1.0/24', 'fd00:10:244:1::/64']);
    assert.equal(c.ipv6DualStack, true);
    assert.equal(c.streamingBindAddr, '0.0.0.0:0', 'an address alone takes a free port, as in cri-dockerd');
    assert.equal(c.imagePullProgressDeadlineMs, 60_000);
    assert.equal(c.runtimeCgroups, '/system.slice/cri-docker.service');
  });

  it('reads true/false flags as Go does: bare, or --name=value', () => {
    assert.equal(run([]).ipv6DualStack, false);
    assert.equal(run(['--ipv6-dual-stack=true']).ipv6DualStack, true);
    assert.equal(run(['--ipv6-dual-stack=F']).ipv6DualStack, false);
    assert.throws(() => run(['--ipv6-dual-stack=maybe']), (err: unknown) => err instanceof FlagError && /--ipv6-dual-stack: "maybe" is not true or false/.test(err.message));
    assert.deepEqual(parseFlags(['--buildinfo']), { kind: 'buildinfo' });
    assert.deepEqual(parseFlags(['--buildinfo=true']), { kind: 'buildinfo' });
    assert.deepEqual(parseFlags(['-h']), { kind: 'help' });
  });

  it('takes an IPv6 streaming address alone, and refuses a pod CIDR that is not one', () => {
    assert.equal(run(['--streaming-bind-addr=::1']).streamingBindAddr, '[::1]:0');
    assert.throws(() => run(['--pod-cidr=10.244.0.0/24,banana']), (err: unknown) => err instanceof FlagError && /--pod-cidr: "banana" is not a CIDR/.test(err.message));
    assert.deepEqual(run(['--pod-cidr=']).podCidrs, []);
  });

  it('takes ipv6-dual-stack from a config file, and no command there', () => {
    const read = (file: string): string => (file === '/etc/a.yaml' ? 'ipv6-dual-stack: true\npod-cidr: 10.1.0.0/16\n' : 'buildinfo: true\n');
    const result = parseFlags(['--config=/etc/a.yaml'], {}, read);
    assert.equal(result.kind, 'run');
    const config = (result as { config: Config }).config;
    assert.equal(config.ipv6DualStack, true);
    assert.deepEqual(config.podCidrs, ['10.1.0.0/16']);
    assert.throws(() => parseFlags(['--config=/etc/b.yaml'], {}, read), /"buildinfo" can only be given on the command line/);
  });

  it('lists the new flags in --help', () => {
    const text = usage();
    for (const flag of ['--pod-cidr value', '--ipv6-dual-stack[=true|false]', '--buildinfo', '-h, --help']) assert.ok(text.includes(flag), flag);
  });
});

describe('the tests-only flags', () => {
  it('point --runtime-cgroups at a cgroup root and stand-in daemon processes of the test', () => {
    const c = run(['--runtime-cgroups=/system.slice/cri-docker.service/', '--test-only-runtime-cgroups-root=/tmp/cg', '--test-only-docker-daemon-pids=12,34']);
    assert.equal(c.runtimeCgroups, '/system.slice/cri-docker.service/');
    assert.deepEqual(c.testOnly, { runtimeCgroupsRoot: '/tmp/cg', dockerDaemonPids: [12, 34] });
    assert.equal(run([]).testOnly, undefined);
  });

  it('are not in --help, and a --config file cannot give them', () => {
    assert.doesNotMatch(usage(), /test-only/);
    assert.match(usage(), /--runtime-cgroups value\n\s+Cgroup to put the Docker daemon's processes \(dockerd, containerd\) in/);
    const read = (): string => 'test-only-docker-daemon-pids: "1"\n';
    assert.throws(() => parseFlags(['--config=/etc/a.yaml'], {}, read), /test-only-docker-daemon-pids/);
  });
});
