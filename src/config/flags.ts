// Command-line flags, and the same settings from a --config YAML file. Names follow cri-dockerd
// wherever the two overlap, so the shim is a drop-in replacement in a kubelet unit file.
// Parsing is pure but for reading that file (injectable): argv and env in, a Config or a
// FlagError out; main.ts turns a FlagError into exit code 2.
import * as fs from 'node:fs';
import { isIP } from 'node:net';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { LOG_LEVELS, type LogFormat, type LogLevel } from '../util/logger';
import { parseDuration } from '../util/duration';
import { MAX_REQUEST_TIMEOUT_MS, MAX_TIMER_DELAY_MS } from '../util/timer-delay';
import { isCidr, parseHostPort, splitCidrList } from '../util/net';
import { parseConfigFile } from './config-file';
import { DEFAULT_DOCKER_ENDPOINT, parseEndpoint, parseListenEndpoint, type Endpoint, type ListenEndpoint } from './endpoint';

export type CgroupDriver = 'cgroupfs' | 'systemd';
type NetworkPluginName = 'noop' | 'cni' | 'kubenet';
export type HairpinMode = 'promiscuous-bridge' | 'hairpin-veth' | 'none';
const HAIRPIN_MODES: readonly HairpinMode[] = ['promiscuous-bridge', 'hairpin-veth', 'none'];

export interface Config {
  containerRuntimeEndpoint: ListenEndpoint;
  dockerEndpoint: Endpoint;
  podInfraContainerImage: string;
  /** Cgroup the Docker daemon's processes are put in, re-checked every 5 minutes ('' = none). */
  runtimeCgroups: string;
  /** Settings only the tests give (hidden flags, see FlagSpec.hidden). */
  testOnly?: TestOnlySettings;
  /** Asked for by the operator; undefined means "whatever Docker uses". */
  cgroupDriver: CgroupDriver | undefined;
  networkPlugin: NetworkPluginName;
  /** Where CNI plugin binaries are looked for, in order (--cni-bin-dir is a comma-separated list). */
  cniBinDirs: string[];
  cniConfDir: string;
  cniCacheDir: string;
  /** MTU of kubenet's bridge and veths; 0 means the default route's interface's. */
  networkPluginMtu: number;
  hairpinMode: HairpinMode;
  /** kubenet masquerades pod traffic to addresses outside this CIDR. */
  nonMasqueradeCidr: string;
  streamingBindAddr: string;
  /** host:port of the Prometheus endpoint ('' = none: nothing listens, nothing is collected). */
  metricsBindAddr: string;
  rootDirectory: string;
  logLevel: LogLevel;
  logFormat: LogFormat;
  imagePullProgressDeadlineMs: number;
  runtimeRequestTimeoutMs: number;
  /** How long SIGTERM waits for in-flight calls before cutting them off. */
  shutdownGraceMs: number;
  /** kubelet CredentialProviderConfig file ('' = no credential provider plugins). */
  imageCredentialProviderConfig: string;
  /** Where the plugins that config names live. */
  imageCredentialProviderBinDir: string;
  /** --pod-cidr: the pod CIDRs kubenet starts with, until kubelet sends its own (UpdateRuntimeConfig). */
  podCidrs: string[];
  /** --ipv6-dual-stack: kubenet takes every pod CIDR kubelet sends; without it only the first (as cri-dockerd). */
  ipv6DualStack: boolean;
}

/**
 * What lets a test run the real --runtime-cgroups code without touching the host's cgroups or
 * its Docker daemon: a cgroup root of the test's own (a hierarchy it mounted), and its own
 * processes standing in for the daemon.
 */
interface TestOnlySettings {
  runtimeCgroupsRoot?: string;
  dockerDaemonPids?: number[];
}

export class FlagError extends Error {}

type ParseResult = { kind: 'run'; config: Config } | { kind: 'help' } | { kind: 'version' } | { kind: 'buildinfo' };

export const DEFAULT_RUNTIME_ENDPOINT = 'unix:///run/cri-docker-shim.sock';
export { DEFAULT_DOCKER_ENDPOINT };
export const DEFAULT_POD_INFRA_IMAGE = 'registry.k8s.io/pause:3.10';
const DEFAULT_ROOT_DIRECTORY = '/var/lib/cri-docker-shim';

interface FlagSpec {
  help: string;
  default?: string;
  /** A command (--help, --version, --buildinfo): it takes no value and no file may set it. */
  boolean?: true;
  /** A setting that is true or false: given bare, it is true; --name=false as in Go's flags. */
  switch?: true;
  /** A one-letter alias (-h). */
  short?: string;
  /** For tests only: left out of --help, the README and --config files. */
  hidden?: true;
}

const FLAGS: Readonly<Record<string, FlagSpec>> = {
  'container-runtime-endpoint': {
    help: 'Where the CRI server listens: unix:///path, tcp://host:port, or fd:// for a socket systemd passes',
    default: DEFAULT_RUNTIME_ENDPOINT,
  },
  'docker-endpoint': {
    help: 'Docker Engine API endpoint (DOCKER_HOST when unset)',
    default: DEFAULT_DOCKER_ENDPOINT,
  },
  'pod-infra-container-image': { help: 'Image of the pause container that holds a pod', default: DEFAULT_POD_INFRA_IMAGE },
  'runtime-cgroups': {
    help: "Cgroup to put the Docker daemon's processes (dockerd, containerd) in, limited to 70% of memory, re-checked every 5 minutes",
    default: '',
  },
  'test-only-runtime-cgroups-root': { help: 'Tests only: where --runtime-cgroups finds the cgroup hierarchies', hidden: true },
  'test-only-docker-daemon-pids': { help: 'Tests only: comma-separated PIDs --runtime-cgroups takes as the Docker daemon', hidden: true },
  'cgroup-driver': { help: 'cgroupfs or systemd; must match Docker (default: detected from Docker)' },
  'network-plugin': { help: 'Pod network plugin: cni, kubenet, or empty for Docker\'s own bridge network', default: 'cni' },
  'cni-bin-dir': { help: 'Directories of CNI plugin binaries, comma-separated, searched in order', default: '/opt/cni/bin,/usr/lib/cni' },
  'cni-conf-dir': { help: 'Directory of CNI network configurations', default: '/etc/cni/net.d' },
  'cni-cache-dir': { help: 'Directory where CNI caches results', default: '/var/lib/cni/cache' },
  'network-plugin-mtu': { help: 'MTU for kubenet\'s bridge and pod interfaces; 0 detects it from the host', default: '0' },
  'hairpin-mode': { help: 'How kubenet lets a pod reach itself through a service: promiscuous-bridge, hairpin-veth or none', default: 'promiscuous-bridge' },
  'pod-cidr': {
    help: "kubenet's pod CIDR (one, or one per family separated by commas) until kubelet sends the node's",
    default: '',
  },
  'ipv6-dual-stack': { help: 'kubenet takes both of the pod CIDRs kubelet sends (without it, only the first)', switch: true },
  'non-masquerade-cidr': { help: 'kubenet masquerades pod traffic leaving for addresses outside this CIDR', default: '10.0.0.0/8' },
  'streaming-bind-addr': {
    help: 'host:port of the exec/attach/port-forward server; an address alone takes a free port',
    default: '127.0.0.1:0',
  },
  'metrics-bind-addr': {
    help: 'host:port to serve Prometheus metrics on at /metrics, e.g. 127.0.0.1:9101 (off when empty)',
    default: '',
  },
  'cri-dockerd-root-directory': { help: 'State directory (checkpoints, container log state)', default: DEFAULT_ROOT_DIRECTORY },
  'log-level': { help: `One of ${LOG_LEVELS.join(', ')} (cri-dockerd's panic is fatal)`, default: 'info' },
  'log-format': { help: 'json, pretty, or auto (pretty when stderr is a terminal)', default: 'auto' },
  'image-pull-progress-deadline': {
    help: 'Cancel a pull that reports no progress for this long (e.g. 1m, 30s)',
    default: '1m',
  },
  'runtime-request-timeout': { help: 'Timeout of each Docker API request (e.g. 2m)', default: '2m' },
  'shutdown-grace-period': { help: 'How long SIGTERM waits for in-flight calls', default: '10s' },
  'image-credential-provider-config': {
    help: 'kubelet CredentialProviderConfig (YAML or JSON) of plugins that supply registry credentials for pulls that carry none',
    default: '',
  },
  'image-credential-provider-bin-dir': { help: 'Directory of the credential provider plugin binaries', default: '' },
  config: { help: 'YAML file of settings named like these flags (network-plugin: kubenet); flags given here win', default: '' },
  version: { help: 'Print the version and the Node.js it runs on, and exit', boolean: true },
  buildinfo: { help: 'Print the program, its version and the Node.js it runs on, and exit', boolean: true },
  help: { help: 'Print this help and exit', boolean: true, short: 'h' },
};

export function usage(): string {
  const lines = ['Usage: cri-docker-shim [flags]', '', 'Flags:'];
  for (const [name, spec] of Object.entries(FLAGS)) {
    if (spec.hidden) continue;
    const def = spec.default !== undefined && spec.default !== '' ? ` (default ${JSON.stringify(spec.default)})` : '';
    const alias = spec.short ? `-${spec.short}, ` : '';
    lines.push(`  ${alias}--${name}${spec.boolean ? '' : spec.switch ? '[=true|false]' : ' value'}`);
    lines.push(`        ${spec.help}${def}`);
  }
  return lines.join('\n');
}

/**
 * Go's flags (pflag, as cri-dockerd parses them) give a true/false flag bare or as --name=value;
 * parseArgs takes commands bare and settings with a value. So a switch given bare carries "true",
 * and a command given --name=false is dropped (--name=true is the command).
 */
function asParseArgs(args: readonly string[]): string[] {
  return args.flatMap((arg) => {
    const [name = '', value] = arg.startsWith('--') ? arg.slice(2).split(/=(.*)/s, 2) : [];
    const spec = FLAGS[name];
    if (spec?.switch && value === undefined) return [`${arg}=true`];
    if (spec?.boolean && value !== undefined) return switchValue(`--${name}`, value) ? [`--${name}`] : [];
    return [arg];
  });
}

/** Go's strconv.ParseBool, which cri-dockerd's flags use. */
function switchValue(label: string, value: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False', ''].includes(value)) return false;
  throw new FlagError(`${label}: ${JSON.stringify(value)} is not true or false`);
}

/** cri-dockerd's streaming address may be an address alone ("0.0.0.0", "::1"): it then takes a free port. */
function streamingAddress(label: string, value: string): string {
  const family = isIP(value);
  if (family === 4) return `${value}:0`;
  if (family === 6) return `[${value}]:0`;
  return hostPort(label, value);
}

function podCidrs(label: string, value: string): string[] {
  const { cidrs, invalid } = splitCidrList(value);
  if (invalid !== undefined) throw new FlagError(`${label}: ${JSON.stringify(invalid)} is not a CIDR`);
  return cidrs;
}

/** cri-dockerd's log levels as ours: logrus has a level above fatal, panic. */
function logLevel(label: string, value: string): LogLevel {
  return value === 'panic' ? 'fatal' : oneOf(label, value, LOG_LEVELS);
}

function oneOf<T extends string>(label: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new FlagError(`${label}: ${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
}

/** The longest a duration flag may be: what a timer holds (a longer one would fire after 1 ms). */
const TIMER_BOUND = { ms: MAX_TIMER_DELAY_MS, text: '596h31m23.647s' };

function duration(label: string, value: string, max: { ms: number; text: string } = TIMER_BOUND): number {
  let ms: number;
  try {
    ms = parseDuration(value);
  } catch (err) {
    throw new FlagError(`${label}: ${(err as Error).message}`);
  }
  if (ms > max.ms) throw new FlagError(`${label}: ${value} is longer than ${max.text}`);
  return ms;
}

function hostPort(label: string, value: string): string {
  if (parseHostPort(value)) return value;
  throw new FlagError(`${label}: ${JSON.stringify(value)} is not host:port`);
}

function endpoint<E>(label: string, value: string, parse: (text: string) => E): E {
  try {
    return parse(value);
  } catch (err) {
    throw new FlagError(`${label}: ${(err as Error).message}`);
  }
}

/** --runtime-cgroups: an absolute cgroup path without . or .. levels, normalised; undefined when it is not one. */
export function normalCgroupPath(cgroup: string): string | undefined {
  if (!cgroup.startsWith('/') || cgroup.split('/').some((p) => p === '..' || p === '.')) return undefined;
  const normal = path.posix.normalize(cgroup);
  return normal.length > 1 ? normal.replace(/\/$/, '') : normal;
}

/** The hidden flags' values (given on the command line only); undefined when none is given. */
function testOnlySettings(values: Record<string, string | boolean | undefined>): TestOnlySettings | undefined {
  const root = values['test-only-runtime-cgroups-root'];
  const pids = values['test-only-docker-daemon-pids'];
  if (typeof root !== 'string' && typeof pids !== 'string') return undefined;
  const settings: TestOnlySettings = {};
  if (typeof root === 'string') {
    if (!root.startsWith('/')) throw new FlagError(`--test-only-runtime-cgroups-root: ${JSON.stringify(root)} must be an absolute path`);
    settings.runtimeCgroupsRoot = root;
  }
  if (typeof pids === 'string') {
    const list = pids.split(',').filter((p) => p !== '');
    if (!list.every((p) => /^[1-9]\d{0,9}$/.test(p))) throw new FlagError(`--test-only-docker-daemon-pids: ${JSON.stringify(pids)} is not a list of PIDs`);
    settings.dockerDaemonPids = list.map(Number);
  }
  return settings;
}

/** Reads --config's file; injected so parsing stays testable without files. */
type ConfigFileReader = (file: string) => string;

const readFileText: ConfigFileReader = (file) => fs.readFileSync(file, 'utf8');

function settingsFromFile(file: string, read: ConfigFileReader): Map<string, string> {
  let text: string;
  try {
    text = read(file);
  } catch (err) {
    throw new FlagError(`--config: cannot read ${JSON.stringify(file)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return parseConfigFile(text, new Set(Object.entries(FLAGS).flatMap(([name, spec]) => (spec.hidden ? [] : [name]))));
  } catch (err) {
    throw new FlagError(`--config ${file}: ${(err as Error).message}`);
  }
}

/** The command line's values by flag name, or a FlagError naming what node:util could not parse. */
function commandLineValues(argv: readonly string[]): Record<string, string | boolean | undefined> {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {};
  for (const [name, spec] of Object.entries(FLAGS)) options[name] = { type: spec.boolean ? 'boolean' : 'string', ...(spec.short ? { short: spec.short } : {}) };
  try {
    return parseArgs({ args: asParseArgs(argv), options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new FlagError((err as Error).message.replace(/^TypeError \[\w+\]: /, ''));
  }
}

type NetworkSettings = Pick<Config, 'networkPlugin' | 'cniBinDirs' | 'cniConfDir' | 'cniCacheDir' | 'networkPluginMtu' | 'hairpinMode' | 'nonMasqueradeCidr' | 'podCidrs' | 'ipv6DualStack'>;

/** The pod network's flags, checked: `str` gives a flag's value, `label` where it came from. */
function networkSettings(str: (name: string) => string, label: (name: string) => string): NetworkSettings {
  const networkPluginRaw = str('network-plugin');
  const networkPlugin: NetworkPluginName =
    networkPluginRaw === '' ? 'noop' : oneOf(label('network-plugin'), networkPluginRaw, ['cni', 'kubenet'] as const);
  const mtuText = str('network-plugin-mtu');
  const networkPluginMtu = Number(mtuText);
  if (!/^\d+$/.test(mtuText) || networkPluginMtu > 65535 || (networkPluginMtu !== 0 && networkPluginMtu < 576)) {
    throw new FlagError(`${label('network-plugin-mtu')}: ${JSON.stringify(mtuText)} must be 0 (detect) or an MTU from 576 to 65535`);
  }
  const nonMasqueradeCidr = str('non-masquerade-cidr');
  if (!isCidr(nonMasqueradeCidr)) throw new FlagError(`${label('non-masquerade-cidr')}: ${JSON.stringify(nonMasqueradeCidr)} is not a CIDR`);
  const cniBinDirs = str('cni-bin-dir').split(',').map((d) => d.trim()).filter((d) => d !== '');
  for (const dir of cniBinDirs) if (!dir.startsWith('/')) throw new FlagError(`${label('cni-bin-dir')}: ${JSON.stringify(dir)} must be an absolute path`);
  return {
    networkPlugin,
    cniBinDirs,
    cniConfDir: str('cni-conf-dir'),
    cniCacheDir: str('cni-cache-dir'),
    networkPluginMtu,
    hairpinMode: oneOf(label('hairpin-mode'), str('hairpin-mode'), HAIRPIN_MODES),
    nonMasqueradeCidr,
    podCidrs: podCidrs(label('pod-cidr'), str('pod-cidr')),
    ipv6DualStack: switchValue(label('ipv6-dual-stack'), str('ipv6-dual-stack')),
  };
}

/**
 * Flags first, then the --config file, then the defaults. Errors name where the bad value
 * came from: `--flag` or `flag (in FILE)`.
 */
export function parseFlags(argv: readonly string[], env: NodeJS.ProcessEnv = process.env, readFile: ConfigFileReader = readFileText): ParseResult {
  const values = commandLineValues(argv);
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  if (values.buildinfo) return { kind: 'buildinfo' };

  const configFile = typeof values.config === 'string' ? values.config : '';
  const fromFile = configFile === '' ? new Map<string, string>() : settingsFromFile(configFile, readFile);
  const given = (name: string): string | undefined => {
    const v = values[name];
    return typeof v === 'string' ? v : fromFile.get(name);
  };
  const str = (name: string): string => given(name) ?? FLAGS[name]?.default ?? '';
  const label = (name: string): string => (typeof values[name] !== 'string' && fromFile.has(name) ? `${name} (in ${configFile})` : `--${name}`);

  const dockerEndpointRaw = given('docker-endpoint') ?? (env.DOCKER_HOST || DEFAULT_DOCKER_ENDPOINT);

  const cgroupDriverRaw = given('cgroup-driver');
  const cgroupDriver =
    cgroupDriverRaw !== undefined ? oneOf(label('cgroup-driver'), cgroupDriverRaw, ['cgroupfs', 'systemd'] as const) : undefined;

  const rootDirectory = str('cri-dockerd-root-directory');
  if (!rootDirectory.startsWith('/')) {
    throw new FlagError(`${label('cri-dockerd-root-directory')}: ${JSON.stringify(rootDirectory)} must be an absolute path`);
  }
  const podInfraContainerImage = str('pod-infra-container-image').trim();
  if (podInfraContainerImage === '') throw new FlagError(`${label('pod-infra-container-image')}: must not be empty`);

  const streamingBindAddr = streamingAddress(label('streaming-bind-addr'), str('streaming-bind-addr'));
  const metricsBindAddrRaw = str('metrics-bind-addr');
  const metricsBindAddr = metricsBindAddrRaw === '' ? '' : hostPort(label('metrics-bind-addr'), metricsBindAddrRaw);

  const runtimeCgroups = str('runtime-cgroups');
  if (runtimeCgroups !== '' && normalCgroupPath(runtimeCgroups) === undefined) {
    throw new FlagError(`${label('runtime-cgroups')}: ${JSON.stringify(runtimeCgroups)} must be an absolute cgroup path without . or ..`);
  }
  const testOnly = testOnlySettings(values);

  const config: Config = {
    containerRuntimeEndpoint: endpoint(label('container-runtime-endpoint'), str('container-runtime-endpoint'), parseListenEndpoint),
    dockerEndpoint: endpoint(label('docker-endpoint'), dockerEndpointRaw, parseEndpoint),
    podInfraContainerImage,
    runtimeCgroups,
    ...(testOnly ? { testOnly } : {}),
    cgroupDriver,
    ...networkSettings(str, label),
    streamingBindAddr,
    metricsBindAddr,
    rootDirectory,
    logLevel: logLevel(label('log-level'), str('log-level')),
    logFormat: oneOf(label('log-format'), str('log-format'), ['json', 'pretty', 'auto'] as const),
    imagePullProgressDeadlineMs: duration(label('image-pull-progress-deadline'), str('image-pull-progress-deadline')),
    runtimeRequestTimeoutMs: duration(label('runtime-request-timeout'), str('runtime-request-timeout'), { ms: MAX_REQUEST_TIMEOUT_MS, text: '24h' }),
    shutdownGraceMs: duration(label('shutdown-grace-period'), str('shutdown-grace-period')),
    imageCredentialProviderConfig: str('image-credential-provider-config'),
    imageCredentialProviderBinDir: str('image-credential-provider-bin-dir'),
  };
  if ((config.imageCredentialProviderConfig === '') !== (config.imageCredentialProviderBinDir === '')) {
    throw new FlagError('--image-credential-provider-config and --image-credential-provider-bin-dir must be given together');
  }
  if (config.runtimeRequestTimeoutMs <= 0) throw new FlagError(`${label('runtime-request-timeout')}: must be greater than 0`);
  if (config.imagePullProgressDeadlineMs <= 0) {
    throw new FlagError(`${label('image-pull-progress-deadline')}: must be greater than 0`);
  }
  return { kind: 'run', config };
}
