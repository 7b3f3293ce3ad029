// A CNI pod network of a test's own: a conf dir with one conflist on a bridge named for the
// test, host-local IPAM in a temp dir, a result cache dir, and the flags that point a shim at
// them; plus what the tests look at to prove nothing is left (veths on the bridge, IPAM
// reservations, iptables rules) and the removal of what the plugins made for the test only
// (the bridge, and the CNI-* chains when they were not there before).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from './shim';

export const CNI_BIN_DIR = '/usr/lib/cni';

export interface TestNetworkOptions {
  /** Plugins after bridge (default: portmap and firewall). */
  extraPlugins?: unknown[];
  /** Plugins before bridge (default: none). */
  leading?: unknown[];
  /** Add an IPv6 range beside the IPv4 one (dual stack). */
  ipv6?: boolean;
  cniVersion?: string;
  /** The network's name before its unique tag (default cds-test). */
  namePrefix?: string;
  /** The bridge masquerades the pods' traffic (a CNI-<hash> chain per pod); default false. */
  ipMasq?: boolean;
}

export interface TestNetwork {
  readonly name: string;
  readonly bridge: string;
  readonly subnet: string;
  readonly subnet6: string | undefined;
  /** The bridge's address: the node as its pods see it. */
  readonly gateway: string;
  readonly confDir: string;
  readonly cacheDir: string;
  readonly ipamDir: string;
  /** Flags for a shim on this network. */
  readonly shimArgs: string[];
  /** Writes (or replaces) a file in the conf dir. */
  writeConf(file: string, doc: unknown): void;
  /** Addresses host-local still holds for containers. */
  reservations(): string[];
  /** Host-side veths attached to the bridge. */
  veths(): string[];
  /** iptables-save lines (both tables, both families) that mention `text`. */
  rulesMentioning(text: string): string[];
  remove(): void;
}

function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

const FAMILIES = ['iptables', 'ip6tables'] as const;
const TABLES = ['nat', 'filter'] as const;

/** CNI-* chains as family/table/chain, to remove only those a test made. */
export function cniChains(): Set<string> {
  const out = new Set<string>();
  for (const family of FAMILIES) {
    for (const table of TABLES) {
      for (const line of sh(`${family}-save`, ['-t', table]).split('\n')) {
        const m = /^:(CNI-\S+)/.exec(line);
        if (m) out.add(`${family}/${table}/${m[1]}`);
      }
    }
  }
  return out;
}

/** The plugins' chains shared by every network (portmap's, the firewall's), as against a pod's own. */
const SHARED_CHAIN = /^CNI-(HOSTPORT-[A-Z]+|FORWARD|ADMIN)$/;

/**
 * Deletes the CNI-* chains that were not in `before` and are this network's (a rule in them, or
 * a jump to them, names one of `marks`: the network's name or subnet, as the plugins' comments
 * and matches do), with every jump to them; then, once no pod's own chain is left on the host
 * (whoever's), the shared chains of portmap and the firewall. Another test's network keeps its
 * chains: removing them would fail its pods' teardown.
 */
export function removeCniChainsSince(before: ReadonlySet<string>, marks: readonly string[]): void {
  // One listing per family and table, not per chain.
  const listed = new Map<string, string[]>();
  const rulesOf = (family: string, table: string): string[] => {
    const key = `${family}/${table}`;
    if (!listed.has(key)) listed.set(key, sh(family, ['-t', table, '-S']).split('\n'));
    return listed.get(key)!;
  };
  const split = (c: string): [string, string, string] => c.split('/') as [string, string, string];
  const ours = [...cniChains()]
    .filter((c) => !before.has(c))
    .map(split)
    .filter(([family, table, chain]) => rulesOf(family, table).some((r) => (r.startsWith(`-A ${chain} `) || r.endsWith(`-j ${chain}`)) && marks.some((m) => r.includes(m))));
  deleteChains(ours);
  const left = [...cniChains()].map(split);
  if (left.every(([, , chain]) => SHARED_CHAIN.test(chain))) deleteChains(left);
}

/** Deletes the chains (family, table, name), every jump to them first. */
function deleteChains(chains: ReadonlyArray<[string, string, string]>): void {
  for (const [family, table, chain] of chains) {
    for (const rule of sh(family, ['-t', table, '-S']).split('\n')) {
      if (rule.startsWith('-A ') && rule.endsWith(`-j ${chain}`)) {
        execFileSync('sh', ['-c', `${family} -t ${table} ${rule.replace(/^-A /, '-D ')}`], { stdio: 'ignore' });
      }
    }
  }
  for (const [family, table, chain] of chains) execFileSync(family, ['-t', table, '-F', chain], { stdio: 'ignore' });
  for (const [family, table, chain] of chains) execFileSync(family, ['-t', table, '-X', chain], { stdio: 'ignore' });
}

export function makeTestNetwork(options: TestNetworkOptions = {}): TestNetwork {
  const tag = randomBytes(3).toString('hex');
  const name = `${options.namePrefix ?? 'cds-test'}-${tag}`;
  const bridge = `cds${tag}`;
  const third = randomBytes(1)[0]!;
  const subnet = `10.234.${third}.0/24`;
  const gateway = `10.234.${third}.1`;
  // Written as an address is printed (no leading zeros in a group), so logs and configs read alike.
  const subnet6 = options.ipv6 ? `fd00:cd5:${parseInt(tag.slice(0, 4), 16).toString(16)}::/64` : undefined;
  const work = tempDir('cni');
  const confDir = path.join(work, 'net.d');
  const cacheDir = path.join(work, 'cache');
  const ipamDir = path.join(work, 'ipam');
  fs.mkdirSync(confDir, { recursive: true });
  const ranges: unknown[] = [[{ subnet, gateway }]];
  const routes: unknown[] = [{ dst: '0.0.0.0/0' }];
  if (subnet6) {
    ranges.push([{ subnet: subnet6 }]);
    routes.push({ dst: '::/0' });
  }
  const doc = {
    cniVersion: options.cniVersion ?? '1.0.0',
    name,
    plugins: [
      ...(options.leading ?? []),
      { type: 'bridge', bridge, isGateway: true, ipMasq: options.ipMasq ?? false, hairpinMode: true, ipam: { type: 'host-local', dataDir: ipamDir, ranges, routes } },
      ...(options.extraPlugins ?? [{ type: 'portmap', capabilities: { portMappings: true } }, { type: 'firewall', backend: 'iptables' }]),
    ],
  };
  const chainsBefore = cniChains();
  const net: TestNetwork = {
    name,
    bridge,
    subnet,
    subnet6,
    gateway,
    confDir,
    cacheDir,
    ipamDir,
    shimArgs: ['--network-plugin=cni', `--cni-conf-dir=${confDir}`, `--cni-cache-dir=${cacheDir}`, `--cni-bin-dir=${CNI_BIN_DIR}`],
    writeConf(file, content) {
      fs.writeFileSync(path.join(confDir, file), typeof content === 'string' ? content : JSON.stringify(content));
    },
    reservations() {
      const dir = path.join(ipamDir, name);
      if (!fs.existsSync(dir)) return [];
      return fs.readdirSync(dir).filter((f) => f !== 'lock' && !f.startsWith('last_reserved_ip'));
    },
    veths() {
      try {
        return sh('ip', ['-o', 'link', 'show', 'master', bridge])
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(':')[1]!.trim().split('@')[0]!);
      } catch {
        return []; // no bridge: no veths
      }
    },
    rulesMentioning(text) {
      const all = [sh('iptables-save', []), sh('ip6tables-save', [])].join('\n');
      return all.split('\n').filter((l) => l.includes(text));
    },
    remove() {
      try {
        execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
      } catch {
        // never made (no pod ran)
      }
      removeCniChainsSince(chainsBefore, [name, subnet, ...(subnet6 ? [subnet6] : [])]);
      fs.rmSync(work, { recursive: true, force: true });
    },
  };
  net.writeConf('10-test.conflist', doc);
  return net;
}

/** Whether this kernel lets the test give pods IPv6 addresses; the reason when not. */
export function ipv6Unavailable(): string | undefined {
  try {
    if (fs.readFileSync('/proc/sys/net/ipv6/conf/all/disable_ipv6', 'utf8').trim() !== '0') return 'IPv6 is disabled on this host';
  } catch {
    return 'this kernel has no IPv6';
  }
  return undefined;
}
