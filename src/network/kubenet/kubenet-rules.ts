// kubenet's own iptables rules, in chains of ours:
//   nat POSTROUTING -j CDS-KUBENET-MASQ: traffic from the pod CIDR to anywhere outside
//     --non-masquerade-cidr (and not to a local address) leaves with the node's address, as
//     kubenet's "SNAT for outbound traffic from cluster" rule did. Unlike that rule, ours names
//     the pod CIDR as source, so the node's own traffic is left alone, and pod-to-pod traffic
//     on the bridge is never masqueraded even when the pod CIDR lies outside the
//     non-masquerade CIDR.
//   filter FORWARD -j CDS-KUBENET-FWD (inserted first): accept traffic from and to the pod
//     CIDR. Docker sets FORWARD's policy to DROP, and br_netfilter sends bridged traffic
//     through FORWARD too, so without this pods could reach neither the world nor each other.
// The masquerade applies in the family of the non-masquerade CIDR only (kubelet's rule did the
// same); "0.0.0.0/0" or "::/0" means no masquerade at all.
import { isIP } from 'node:net';
import { InvalidArgumentError } from '../../errors';
import { isCidr } from '../../util/net';
import {
  ensureJumpLines,
  renderChainRemoval,
  restore,
  saveTable,
  type IpFamily,
  type JumpRule,
  type SavedTable,
  type Table,
} from '../hostport/iptables';
import { CommandFailedError, type CommandRunner } from '../hostport/runner';

const KUBENET_MASQ_CHAIN = 'CDS-KUBENET-MASQ';
const KUBENET_FWD_CHAIN = 'CDS-KUBENET-FWD';

interface KubenetRulesConfig {
  /** The node's pod CIDRs, at most one per family. */
  podCidrs: readonly string[];
  /** Destinations reached without masquerade (--non-masquerade-cidr). */
  nonMasqueradeCidr: string;
}

function cidrFamily(cidr: string): IpFamily {
  return isIP(cidr.slice(0, cidr.indexOf('/'))) === 6 ? 6 : 4;
}

export function validateKubenetConfig(config: KubenetRulesConfig): void {
  const seen = new Set<IpFamily>();
  for (const cidr of config.podCidrs) {
    if (!isCidr(cidr)) throw new InvalidArgumentError(`pod CIDR ${JSON.stringify(cidr.slice(0, 80))} is not a CIDR`);
    const family = cidrFamily(cidr);
    if (seen.has(family)) throw new InvalidArgumentError(`more than one IPv${family} pod CIDR`);
    seen.add(family);
  }
  if (!isCidr(config.nonMasqueradeCidr)) {
    throw new InvalidArgumentError(`non-masquerade CIDR ${JSON.stringify(config.nonMasqueradeCidr.slice(0, 80))} is not a CIDR`);
  }
}

function isKubenetChain(chain: string): boolean {
  return chain === KUBENET_MASQ_CHAIN || chain === KUBENET_FWD_CHAIN;
}

const MASQ_JUMP: JumpRule = { table: 'nat', from: 'POSTROUTING', to: KUBENET_MASQ_CHAIN, matches: '-m comment --comment "cds kubenet masquerade"' };
const FWD_JUMP: JumpRule = { table: 'filter', from: 'FORWARD', to: KUBENET_FWD_CHAIN, matches: '-m comment --comment "cds kubenet forward"' };

interface ExistingTables {
  nat: SavedTable | undefined;
  filter: SavedTable | undefined;
}

/**
 * The restore input (nat, then filter) that makes one family's kubenet chains match the
 * config: rebuilt when the family has a pod CIDR, removed when it has none.
 */
export function renderKubenetRules(config: KubenetRulesConfig, family: IpFamily, existing: ExistingTables): string {
  const cidrs = config.podCidrs.filter((c) => cidrFamily(c) === family);
  if (cidrs.length === 0) return renderKubenetRemoval(existing);
  const nonMasq = config.nonMasqueradeCidr;
  const masquerade = cidrFamily(nonMasq) === family && !/\/0$/.test(nonMasq);
  const nat = ['*nat', `:${KUBENET_MASQ_CHAIN} - [0:0]`, ...ensureJumpLines(existing.nat, [MASQ_JUMP], false)];
  const filter = ['*filter', `:${KUBENET_FWD_CHAIN} - [0:0]`, ...ensureJumpLines(existing.filter, [FWD_JUMP], true)];
  for (const cidr of cidrs) {
    nat.push(`-A ${KUBENET_MASQ_CHAIN} -s ${cidr} -d ${cidr} -m comment --comment "cds kubenet pod to pod" -j RETURN`);
    if (masquerade) {
      nat.push(
        `-A ${KUBENET_MASQ_CHAIN} -s ${cidr} ! -d ${nonMasq} -m addrtype ! --dst-type LOCAL ` +
          '-m comment --comment "cds kubenet SNAT for outbound traffic from pods" -j MASQUERADE',
      );
    }
    filter.push(`-A ${KUBENET_FWD_CHAIN} -s ${cidr} -m comment --comment "cds kubenet from pods" -j ACCEPT`);
    filter.push(`-A ${KUBENET_FWD_CHAIN} -d ${cidr} -m comment --comment "cds kubenet to pods" -j ACCEPT`);
  }
  return `${[...nat, 'COMMIT', ...filter, 'COMMIT'].join('\n')}\n`;
}

/** Restore input removing every kubenet chain and jump; '' when there are none. */
export function renderKubenetRemoval(existing: ExistingTables): string {
  return renderChainRemoval('nat', existing.nat, isKubenetChain) + renderChainRemoval('filter', existing.filter, isKubenetChain);
}

async function readTables(runner: CommandRunner, family: IpFamily): Promise<ExistingTables | undefined> {
  try {
    const tables: Table[] = ['nat', 'filter'];
    const [nat, filter] = await Promise.all(tables.map((t) => saveTable(runner, family, t)));
    return { nat, filter };
  } catch (err) {
    // No IPv6 netfilter on this node: nothing of ours can be there either.
    if (family === 6 && err instanceof CommandFailedError) return undefined;
    throw err;
  }
}

/** Brings both families' kubenet rules in line with the config (idempotent; call again when the pod CIDR changes). */
export async function applyKubenetRules(runner: CommandRunner, config: KubenetRulesConfig): Promise<void> {
  validateKubenetConfig(config);
  for (const family of [4, 6] as const) {
    const needed = config.podCidrs.some((c) => cidrFamily(c) === family);
    const existing = await readTables(runner, family);
    if (!existing) {
      if (needed) throw new InvalidArgumentError(`an IPv${family} pod CIDR is set but ip6tables cannot run on this node`);
      continue;
    }
    const text = renderKubenetRules(config, family, existing);
    if (text) await restore(runner, family, text);
  }
}

/** Removes every kubenet chain and jump rule in both families. */
export async function removeKubenetRules(runner: CommandRunner): Promise<void> {
  for (const family of [4, 6] as const) {
    const existing = await readTables(runner, family);
    if (!existing) continue;
    const text = renderKubenetRemoval(existing);
    if (text) await restore(runner, family, text);
  }
}
