// Host ports as NAT rules (pure): which mappings apply to which address family, the chain each
// mapping gets, and the iptables-restore input that makes the nat table match a set of pods.
//
// Layout (one per address family, in iptables and ip6tables):
//   nat PREROUTING, OUTPUT  -m addrtype --dst-type LOCAL -j CDS-HOSTPORTS
//   CDS-HOSTPORTS           one rule per mapping: [-d hostIP] -p proto --dport hostPort -j CDS-HP-<hash>
//   CDS-HP-<hash>           -j DNAT --to-destination podIP:containerPort
//   nat POSTROUTING         -j CDS-HOSTPORTS-SNAT
//   CDS-HOSTPORTS-SNAT      masquerade hairpin traffic (the pod reaching itself through its host
//                           port: source and destination are the pod after DNAT) and traffic from
//                           localhost leaving through the bridge
//   filter INPUT            -j CDS-HOSTPORTS-GUARD (IPv4 with a bridge): drops packets from the
//                           bridge addressed to 127/8 that no DNAT of ours explains, since
//                           route_localnet=1 on the bridge would otherwise let pods reach the
//                           node's loopback services (CVE-2020-8558)
// Rules in CDS-HOSTPORTS and CDS-HOSTPORTS-SNAT carry `cds-sandbox=<id>` in their comment, so a
// new shim process can tell whose rules it finds before it has been told which pods still run.
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { InvalidArgumentError } from '../../errors';
import type { PortMapping } from '../network-host';
import { ensureJumpLines, renderChainRemoval, ruleChain, ruleTarget, type IpFamily, type JumpRule, type SavedTable } from './iptables';

const HOSTPORTS_CHAIN = 'CDS-HOSTPORTS';
const HOSTPORTS_SNAT_CHAIN = 'CDS-HOSTPORTS-SNAT';
const HOSTPORTS_GUARD_CHAIN = 'CDS-HOSTPORTS-GUARD';
const MAPPING_CHAIN_PREFIX = 'CDS-HP-';
/** iptables refuses chain names longer than this. */
export const MAX_CHAIN_NAME = 28;

const MAPPING_CHAIN = /^CDS-HP-[A-Z2-7]{16}$/;
const SANDBOX_TAG = /cds-sandbox=([0-9a-f]{1,64})(?![0-9a-f])/;
const SANDBOX_ID = /^[0-9a-f]{1,64}$/;
/** Interface names as the kernel allows them (IFNAMSIZ 16, no '/', no whitespace). */
const IFNAME = /^[A-Za-z0-9_.:@-]{1,15}$/;

/** A pod whose host ports the manager maintains. */
export interface PodHostports {
  /** The pause container's Docker ID (lower-case hex). */
  sandboxId: string;
  /** The pod's IPs, at most one per address family. */
  ips: readonly string[];
  portMappings: readonly PortMapping[];
}

/** The pod's IP in one family, if it has one. */
function podIpOf(pod: PodHostports, family: IpFamily): string | undefined {
  return pod.ips.find((ip) => isIP(ip) === family);
}

/** '' and the unspecified addresses mean every local address. */
function isAnyHostIp(hostIp: string): boolean {
  return hostIp === '' || hostIp === '0.0.0.0' || hostIp === '::';
}

function isPortNumber(n: unknown, min: number): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= min && n <= 65535;
}

/**
 * Checks a pod before any of it reaches rule text: everything here ends up inside iptables
 * input, so a value outside its expected form could add rules of its own.
 */
export function validatePod(pod: PodHostports): void {
  if (!SANDBOX_ID.test(pod.sandboxId)) {
    throw new InvalidArgumentError(`sandbox ID ${JSON.stringify(pod.sandboxId.slice(0, 80))} is not lower-case hex`);
  }
  const families = new Set<number>();
  for (const ip of pod.ips) {
    const family = isIP(ip);
    if (family === 0) throw new InvalidArgumentError(`pod IP ${JSON.stringify(ip.slice(0, 80))} is not an IP address`);
    if (families.has(family)) throw new InvalidArgumentError(`pod has more than one IPv${family} address`);
    families.add(family);
  }
  for (const pm of pod.portMappings) {
    if (pm.protocol !== 'TCP' && pm.protocol !== 'UDP' && pm.protocol !== 'SCTP') {
      throw new InvalidArgumentError(`port mapping protocol ${JSON.stringify(String(pm.protocol))} is not TCP, UDP or SCTP`);
    }
    if (!isPortNumber(pm.containerPort, 1)) throw new InvalidArgumentError(`port mapping container_port ${String(pm.containerPort)} is out of range`);
    if (!isPortNumber(pm.hostPort, 0)) throw new InvalidArgumentError(`port mapping host_port ${String(pm.hostPort)} is out of range`);
    if (pm.hostIp !== '' && isIP(pm.hostIp) === 0) {
      throw new InvalidArgumentError(`port mapping host_ip ${JSON.stringify(pm.hostIp.slice(0, 80))} is not an IP address`);
    }
  }
}

export function validateInterfaceName(name: string): string {
  if (!IFNAME.test(name)) throw new InvalidArgumentError(`interface name ${JSON.stringify(name.slice(0, 40))} is not valid`);
  return name;
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 without padding. */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/**
 * The chain of one mapping: a hash of what identifies it, so the same pod and mapping always
 * get the same chain (a restarted shim finds its chains) and the name fits iptables' limit.
 */
export function mappingChainName(sandboxId: string, pm: PortMapping): string {
  const digest = createHash('sha256').update(`${sandboxId}/${pm.protocol}/${pm.hostPort}/${pm.hostIp}`).digest();
  return MAPPING_CHAIN_PREFIX + base32(digest).slice(0, 16);
}

export function isMappingChain(name: string): boolean {
  return MAPPING_CHAIN.test(name);
}

/** Every chain this module creates, in either table. */
function isHostportChain(name: string): boolean {
  return name === HOSTPORTS_CHAIN || name === HOSTPORTS_SNAT_CHAIN || name === HOSTPORTS_GUARD_CHAIN || isMappingChain(name);
}

/** A mapping as it applies in one family. */
interface FamilyMapping {
  sandboxId: string;
  chain: string;
  podIp: string;
  mapping: PortMapping;
}

/**
 * The pod's mappings that apply in a family: those with a host port, whose host IP is unset or
 * of that family, when the pod has an IP of that family. A mapping named twice counts once.
 */
function familyMappings(pod: PodHostports, family: IpFamily): PortMapping[] {
  if (podIpOf(pod, family) === undefined) return [];
  const seen = new Set<string>();
  const out: PortMapping[] = [];
  for (const pm of pod.portMappings) {
    if (pm.hostPort === 0) continue;
    if (pm.hostIp !== '' && isIP(pm.hostIp) !== family) continue;
    // What the chain name hashes, less the sandbox: the same mapping gets the same chain.
    const key = `${pm.protocol}/${pm.hostPort}/${pm.hostIp}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(pm);
  }
  return out;
}

/** familyMappings with each mapping's chain. */
export function mappingsFor(pod: PodHostports, family: IpFamily): FamilyMapping[] {
  const podIp = podIpOf(pod, family);
  if (podIp === undefined) return [];
  return familyMappings(pod, family).map((pm) => ({ sandboxId: pod.sandboxId, chain: mappingChainName(pod.sandboxId, pm), podIp, mapping: pm }));
}

/** Whether the pod has a host port in one of the families. */
export function hasHostPorts(pod: PodHostports, families: readonly IpFamily[] = [4, 6]): boolean {
  return families.some((family) => familyMappings(pod, family).length > 0);
}

/** The pods holding one protocol's port number in one family: on every address, and per address. */
interface PortHolders {
  any: string | undefined;
  byIp: Map<string, string>;
}

/**
 * Which pod holds each host port, keyed by family, protocol and port number, so checking a pod
 * costs one lookup per mapping whatever the other pods hold (scanning every pod per mapping
 * took 45 s for two pods of 4,000 ports).
 */
export class HostPortIndex {
  private readonly ports = new Map<string, PortHolders>();

  /** Records the pod's host ports; a port already recorded keeps its first holder. */
  add(pod: PodHostports): void {
    for (const family of [4, 6] as const) {
      for (const pm of familyMappings(pod, family)) {
        const key = `${family}/${pm.protocol}/${pm.hostPort}`;
        let holders = this.ports.get(key);
        if (!holders) {
          holders = { any: undefined, byIp: new Map() };
          this.ports.set(key, holders);
        }
        if (isAnyHostIp(pm.hostIp)) holders.any ??= pod.sandboxId;
        else if (!holders.byIp.has(pm.hostIp)) holders.byIp.set(pm.hostIp, pod.sandboxId);
      }
    }
  }

  /** Why `pod` cannot have its host ports beside those recorded (another pod holds one), if it cannot; its own are no conflict. */
  conflict(pod: PodHostports): string | undefined {
    for (const family of [4, 6] as const) {
      for (const pm of familyMappings(pod, family)) {
        const holders = this.ports.get(`${family}/${pm.protocol}/${pm.hostPort}`);
        const hit = holders && otherHolder(holders, pm.hostIp, pod.sandboxId);
        if (hit !== undefined) {
          const where = isAnyHostIp(pm.hostIp) ? '' : ` on ${pm.hostIp}`;
          return `host port ${pm.protocol}/${pm.hostPort}${where} is already used by pod sandbox ${hit.slice(0, 12)}`;
        }
      }
    }
    return undefined;
  }
}

/** A pod other than `self` that holds the port on `hostIp`, or on every address when it is a wildcard. */
function otherHolder(holders: PortHolders, hostIp: string, self: string): string | undefined {
  if (holders.any !== undefined && holders.any !== self) return holders.any;
  if (!isAnyHostIp(hostIp)) {
    const holder = holders.byIp.get(hostIp);
    return holder === self ? undefined : holder;
  }
  // Few iterations: the only entries skipped are self's own, one per host IP it names for this port.
  for (const holder of holders.byIp.values()) if (holder !== self) return holder;
  return undefined;
}

/** Why `pod` cannot have its host ports next to `others` (another pod holds one), if it cannot. */
export function findConflict(others: Iterable<PodHostports>, pod: PodHostports): string | undefined {
  const index = new HostPortIndex();
  for (const other of others) if (other.sandboxId !== pod.sandboxId) index.add(other);
  return index.conflict(pod);
}

/** A host port as a listening socket holds it. */
export interface HeldPortKey {
  family: IpFamily;
  protocol: 'tcp' | 'udp';
  /** '' for every address of the family. */
  hostIp: string;
  hostPort: number;
}

export function heldPortName(k: HeldPortKey): string {
  const ip = k.hostIp === '' ? (k.family === 4 ? '0.0.0.0' : '::') : k.hostIp;
  return `${k.protocol}${k.family}/${k.family === 6 ? `[${ip}]` : ip}:${k.hostPort}`;
}

/** The sockets that keep the pod's host ports from other host processes (not SCTP: Node has no SCTP sockets). */
export function portsToHold(pod: PodHostports): HeldPortKey[] {
  const out: HeldPortKey[] = [];
  for (const family of [4, 6] as const) {
    for (const mapping of familyMappings(pod, family)) {
      if (mapping.protocol === 'SCTP') continue;
      out.push({
        family,
        protocol: mapping.protocol === 'TCP' ? 'tcp' : 'udp',
        hostIp: isAnyHostIp(mapping.hostIp) ? '' : mapping.hostIp,
        hostPort: mapping.hostPort,
      });
    }
  }
  return out;
}

function hostCidr(ip: string): string {
  return `${ip}/${isIP(ip) === 6 ? 128 : 32}`;
}

function comment(text: string): string {
  return `-m comment --comment "${text}"`;
}

function sandboxComment(sandboxId: string, what: string): string {
  return comment(`cds-sandbox=${sandboxId} ${what}`);
}

/** The sandbox a rule of ours belongs to, from its comment. */
export function ruleSandbox(line: string): string | undefined {
  return SANDBOX_TAG.exec(line)?.[1];
}

const HOSTPORT_JUMPS: readonly JumpRule[] = [
  { table: 'nat', from: 'PREROUTING', to: HOSTPORTS_CHAIN, matches: `${comment('cds hostport portals')} -m addrtype --dst-type LOCAL` },
  { table: 'nat', from: 'OUTPUT', to: HOSTPORTS_CHAIN, matches: `${comment('cds hostport portals')} -m addrtype --dst-type LOCAL` },
  { table: 'nat', from: 'POSTROUTING', to: HOSTPORTS_SNAT_CHAIN, matches: comment('cds hostport masquerade') },
];

const GUARD_JUMP: JumpRule = { table: 'filter', from: 'INPUT', to: HOSTPORTS_GUARD_CHAIN, matches: comment('cds hostport localnet guard') };

function mappingRules(m: FamilyMapping): { top: string; chain: string[] } {
  const pm = m.mapping;
  const proto = pm.protocol.toLowerCase();
  const note = sandboxComment(m.sandboxId, `hostport ${proto}/${pm.hostPort}`);
  const dst = isAnyHostIp(pm.hostIp) ? '' : ` -d ${hostCidr(pm.hostIp)}`;
  const to = isIP(m.podIp) === 6 ? `[${m.podIp}]:${pm.containerPort}` : `${m.podIp}:${pm.containerPort}`;
  return {
    top: `-A ${HOSTPORTS_CHAIN}${dst} -p ${proto} -m ${proto} --dport ${pm.hostPort} ${note} -j ${m.chain}`,
    chain: [`-A ${m.chain} -p ${proto} ${note} -j DNAT --to-destination ${to}`],
  };
}

interface NatRenderInput {
  family: IpFamily;
  /** Validated pods, the whole set this shim manages. */
  pods: readonly PodHostports[];
  /** The bridge localhost traffic leaves through to reach pods (kubenet's cbr0). */
  natInterface?: string;
  /** The nat table as it is now (iptables-save), undefined when it has nothing to show. */
  existing: SavedTable | undefined;
  /**
   * Whether to keep the rules found for a sandbox not in `pods`. True for every sandbox until
   * the manager has been given the full set once (syncAll): until then it cannot tell a pod it
   * was not told about from a pod that is gone.
   */
  keepForeign: (sandboxId: string) => boolean;
}

interface NatRender {
  /** iptables-restore input for the nat table. */
  text: string;
  /** Mapping chains that exist after the restore (ours and kept ones). */
  chains: string[];
  /** Mapping chains the restore deletes. */
  deleted: string[];
}

/**
 * The nat restore input that rebuilds our chains for `pods`: the top and SNAT chains are
 * flushed and refilled, each mapping's chain is created or flushed, chains of ours that belong
 * to no mapping are deleted, and the jumps from PREROUTING, OUTPUT and POSTROUTING exist once.
 */
export function renderNat(input: NatRenderInput): NatRender {
  const { family, existing } = input;
  const wanted = new Set(input.pods.map((p) => p.sandboxId));
  const foreign = (line: string): boolean => {
    const id = ruleSandbox(line);
    return id !== undefined && !wanted.has(id) && input.keepForeign(id);
  };
  const keptTop = (existing?.rules ?? []).filter((r) => ruleChain(r) === HOSTPORTS_CHAIN && foreign(r));
  const keptSnat = (existing?.rules ?? []).filter((r) => ruleChain(r) === HOSTPORTS_SNAT_CHAIN && foreign(r));
  const keptChains = new Set(keptTop.map((r) => ruleTarget(r) ?? '').filter(isMappingChain));

  const mappings = [...input.pods]
    .sort((a, b) => (a.sandboxId < b.sandboxId ? -1 : a.sandboxId > b.sandboxId ? 1 : 0))
    .flatMap((p) => mappingsFor(p, family));
  const ownChains = [...new Set(mappings.map((m) => m.chain))];
  const owned = new Set(ownChains);
  const deleted = (existing?.chains ?? []).filter((c) => isMappingChain(c) && !owned.has(c) && !keptChains.has(c));

  const top: string[] = [...keptTop];
  const chainRules: string[] = [];
  for (const m of mappings) {
    const r = mappingRules(m);
    top.push(r.top);
    chainRules.push(...r.chain);
  }
  const snat: string[] = [];
  if (input.natInterface !== undefined) {
    const localhost = family === 4 ? '127.0.0.0/8' : '::1/128';
    snat.push(`-A ${HOSTPORTS_SNAT_CHAIN} -s ${localhost} -o ${input.natInterface} ${comment('cds localhost to hostports')} -j MASQUERADE`);
  }
  snat.push(...keptSnat);
  const hairpinned = new Set<string>();
  for (const m of mappings) {
    if (hairpinned.has(m.podIp)) continue;
    hairpinned.add(m.podIp);
    snat.push(`-A ${HOSTPORTS_SNAT_CHAIN} -s ${hostCidr(m.podIp)} -d ${hostCidr(m.podIp)} ${sandboxComment(m.sandboxId, 'hairpin')} -j MASQUERADE`);
  }

  const lines = [
    '*nat',
    `:${HOSTPORTS_CHAIN} - [0:0]`,
    `:${HOSTPORTS_SNAT_CHAIN} - [0:0]`,
    ...ownChains.map((c) => `:${c} - [0:0]`),
    ...deleted.map((c) => `:${c} - [0:0]`),
    ...ensureJumpLines(existing, HOSTPORT_JUMPS, false),
    ...top,
    ...snat,
    ...chainRules,
    ...deleted.map((c) => `-X ${c}`),
    'COMMIT',
  ];
  return { text: `${lines.join('\n')}\n`, chains: [...ownChains, ...keptChains], deleted };
}

/** Restore input for the filter table's localnet guard; '' when nothing needs changing. */
export function renderGuard(existing: SavedTable | undefined, natInterface: string | undefined): string {
  if (natInterface === undefined) return renderRemoval('filter', existing);
  const rule =
    `-A ${HOSTPORTS_GUARD_CHAIN} -i ${natInterface} -d 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT ` +
    `${comment('cds drop martian localhost from the bridge')} -j DROP`;
  const lines = ['*filter', `:${HOSTPORTS_GUARD_CHAIN} - [0:0]`, ...ensureJumpLines(existing, [GUARD_JUMP], true), rule, 'COMMIT'];
  return `${lines.join('\n')}\n`;
}

/** Restore input that removes every host port chain and the jumps to them from a table; '' when it has none. */
export function renderRemoval(table: 'nat' | 'filter', existing: SavedTable | undefined): string {
  return renderChainRemoval(table, existing, isHostportChain);
}
