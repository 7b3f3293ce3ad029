// --hairpin-mode: how a pod reaches itself through a service or host port. The packet leaves
// the pod's veth, is DNATed back to the pod and must go out of the same bridge port it came in
// on, which a bridge refuses unless told otherwise:
//   promiscuous-bridge: the bridge (cbr0) in promiscuous mode (kubelet's default for kubenet)
//   hairpin-veth:       the hairpin flag on each pod's bridge port
//                       (/sys/class/net/<veth>/brport/hairpin_mode)
//   none:               nothing; hairpin traffic does not work
// The flags are set with `ip link` (netlink) rather than by writing sysfs, so they work through
// the same runner as everything else, in whichever network namespace it points at.
import type { HairpinMode } from '../../config/flags';
import { validateInterfaceName } from '../hostport/hostport-rules';
import type { CommandRunner } from '../hostport/runner';


interface HairpinPlan {
  /** Put the bridge in promiscuous mode. */
  bridgePromisc: boolean;
  /** Set the hairpin flag on the pods' bridge ports. */
  vethHairpin: boolean;
}

export function hairpinPlan(mode: HairpinMode): HairpinPlan {
  switch (mode) {
    case 'promiscuous-bridge':
      return { bridgePromisc: true, vethHairpin: false };
    case 'hairpin-veth':
      return { bridgePromisc: false, vethHairpin: true };
    case 'none':
      return { bridgePromisc: false, vethHairpin: false };
  }
}

async function setBridgePromisc(runner: CommandRunner, bridge: string, on: boolean): Promise<void> {
  await runner.run('ip', ['link', 'set', 'dev', validateInterfaceName(bridge), 'promisc', on ? 'on' : 'off']);
}

/** The hairpin flag of one bridge port (the host side of a pod's veth). */
async function setVethHairpin(runner: CommandRunner, veth: string, on: boolean): Promise<void> {
  await runner.run('ip', ['link', 'set', 'dev', validateInterfaceName(veth), 'type', 'bridge_slave', 'hairpin', on ? 'on' : 'off']);
}

/** The interfaces enslaved to a bridge. */
export async function bridgePorts(runner: CommandRunner, bridge: string): Promise<string[]> {
  const out = await runner.run('ip', ['-j', 'link', 'show', 'master', validateInterfaceName(bridge)]);
  const parsed: unknown = JSON.parse(out.trim() || '[]');
  if (!Array.isArray(parsed)) return [];
  return parsed.flatMap((l: unknown) => {
    const name = typeof l === 'object' && l !== null ? (l as { ifname?: unknown }).ifname : undefined;
    return typeof name === 'string' ? [name] : [];
  });
}

/**
 * Applies a hairpin mode: to the bridge, and to `veth` when given (a pod just attached), else
 * to every port of the bridge.
 */
export async function applyHairpinMode(runner: CommandRunner, mode: HairpinMode, bridge: string, veth?: string): Promise<void> {
  const plan = hairpinPlan(mode);
  if (plan.bridgePromisc) await setBridgePromisc(runner, bridge, true);
  if (plan.vethHairpin) {
    const ports = veth !== undefined ? [veth] : await bridgePorts(runner, bridge);
    for (const port of ports) await setVethHairpin(runner, port, true);
  }
}
