// Keeps the node's host port NAT rules equal to the set of pods it is told about. Every change
// (add, remove, syncAll) rewrites our chains from that whole set in one iptables-restore per
// address family, so a failed or interrupted change never leaves half a pod behind: the next
// one writes the full picture again.
import { FailedPreconditionError } from '../../errors';
import type { Logger } from '../../util/logger';
import { restore, saveTable, type IpFamily } from './iptables';
import { LocalPortHolder, type HeldPort, type PortHolder } from './port-holder';
import {
  findConflict,
  hasHostPorts,
  heldPortName,
  HostPortIndex,
  portsToHold,
  renderGuard,
  renderNat,
  renderRemoval,
  validateInterfaceName,
  validatePod,
  type HeldPortKey,
  type PodHostports,
} from './hostport-rules';
import { CommandFailedError, type CommandRunner } from './runner';

/** A host port another pod, or another process on the node, already has. */
export class HostPortInUseError extends FailedPreconditionError {}

interface HostportManagerOptions {
  /** Where the rules go: the shim's namespace (hostRunner) or another (netnsRunner). */
  runner: CommandRunner;
  /**
   * The bridge pods hang off (kubenet's cbr0). With it, traffic from 127.0.0.1 to a host port
   * is masqueraded out of that bridge and route_localnet is enabled on it (the kernel
   * otherwise drops packets with a loopback source leaving a non-loopback interface).
   */
  natInterface?: string;
  /** Holds host ports open; LocalPortHolder by default, null to hold none. */
  portHolder?: PortHolder | null;
  /** The families to manage; both by default (IPv6 is skipped while ip6tables cannot run and no pod needs it). */
  families?: readonly IpFamily[];
  logger?: Logger;
}

interface SyncReport {
  /** Mapping chains in place per family after the sync. */
  chains: Partial<Record<IpFamily, number>>;
  /** Mapping chains deleted because no pod has them any more. */
  deleted: string[];
  /** Pods left out because an earlier pod in the list has the same host port. */
  conflicts: string[];
  /** Host ports that could not be held open (the rules are in place all the same). */
  unheld: string[];
}

interface Held {
  sandboxId: string;
  port: HeldPort;
}

function copyPod(pod: PodHostports): PodHostports {
  return { sandboxId: pod.sandboxId, ips: [...pod.ips], portMappings: pod.portMappings.map((pm) => ({ ...pm })) };
}

export class HostportManager {
  private readonly runner: CommandRunner;
  private readonly natInterface: string | undefined;
  private readonly holder: PortHolder | null;
  private readonly families: readonly IpFamily[];
  private readonly logger: Logger | undefined;
  private readonly pods = new Map<string, PodHostports>();
  /**
   * False until syncAll: a fresh manager (say, after a shim restart) keeps the rules it finds
   * for pods it was not told about, except those it was asked to remove.
   */
  private authoritative = false;
  private readonly forgotten = new Set<string>();
  private readonly held = new Map<string, Held>();
  /** route_localnet as it was before this manager set it, to put back on removeAll. */
  private localnetBefore: string | undefined;
  /** The guard and route_localnet are in place; checked again on syncAll, not on every change. */
  private localnetReady = false;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: HostportManagerOptions) {
    this.runner = options.runner;
    this.natInterface = options.natInterface === undefined ? undefined : validateInterfaceName(options.natInterface);
    this.holder = options.portHolder === undefined ? new LocalPortHolder() : options.portHolder;
    this.families = options.families ?? [4, 6];
    this.logger = options.logger;
  }

  /** Sets up (or updates) a pod's host ports. Fails with HostPortInUseError when a port is taken. */
  add(pod: PodHostports): Promise<void> {
    return this.serial(async () => {
      validatePod(pod);
      const conflict = findConflict(this.pods.values(), pod);
      if (conflict) throw new HostPortInUseError(conflict);
      const previous = this.pods.get(pod.sandboxId);
      if (!previous && !hasHostPorts(pod) && this.authoritative) return;
      const opened = await this.holdPorts(pod);
      this.pods.set(pod.sandboxId, copyPod(pod));
      this.forgotten.delete(pod.sandboxId);
      try {
        await this.sync();
      } catch (err) {
        if (previous) this.pods.set(pod.sandboxId, previous);
        else this.pods.delete(pod.sandboxId);
        await this.release(opened);
        throw err;
      }
      await this.releaseUnowned();
    });
  }

  /** Removes a pod's host ports; succeeds for a pod it does not know. */
  remove(sandboxId: string): Promise<void> {
    return this.serial(async () => {
      const known = this.pods.delete(sandboxId);
      if (!this.authoritative) this.forgotten.add(sandboxId);
      else if (!known) return;
      await this.sync();
      await this.releaseUnowned();
    });
  }

  /**
   * Makes the rules match exactly these pods: after a restart, every pod still running gets
   * its rules and ports back and every rule of a pod that is gone is deleted. Pods whose host
   * port an earlier pod in the list already has are left out and reported.
   */
  syncAll(pods: readonly PodHostports[]): Promise<SyncReport> {
    return this.serial(async () => {
      pods.forEach(validatePod);
      const accepted: PodHostports[] = [];
      const conflicts: string[] = [];
      const index = new HostPortIndex();
      for (const pod of pods) {
        const conflict = index.conflict(pod);
        if (conflict) {
          conflicts.push(`pod sandbox ${pod.sandboxId.slice(0, 12)}: ${conflict}`);
        } else {
          accepted.push(copyPod(pod));
          index.add(pod);
        }
      }
      this.pods.clear();
      for (const pod of accepted) this.pods.set(pod.sandboxId, pod);
      this.authoritative = true;
      this.forgotten.clear();
      this.localnetReady = false;
      const report = await this.sync();
      await this.releaseUnowned();
      const unheld: string[] = [];
      for (const pod of accepted) {
        for (const key of portsToHold(pod)) {
          try {
            await this.holdOne(pod.sandboxId, key);
          } catch (err) {
            unheld.push(`${heldPortName(key)}: ${(err as Error).message}`);
          }
        }
      }
      for (const c of conflicts) this.logger?.warn({ conflict: c }, 'host port left out');
      for (const u of unheld) this.logger?.warn({ port: u }, 'host port rules restored but the port could not be held');
      return { ...report, conflicts, unheld };
    });
  }

  /** Deletes every chain and jump rule of ours in both families and closes every held port. */
  removeAll(): Promise<void> {
    return this.serial(async () => {
      for (const family of this.families) {
        for (const table of ['nat', 'filter'] as const) {
          let existing;
          try {
            existing = await saveTable(this.runner, family, table);
          } catch (err) {
            if (family === 6 && err instanceof CommandFailedError) continue;
            throw err;
          }
          const text = renderRemoval(table, existing);
          if (text) await restore(this.runner, family, text);
        }
      }
      if (this.natInterface !== undefined && this.localnetBefore !== undefined && this.localnetBefore !== '1') {
        await this.runner.run('sysctl', ['-q', '-w', `${localnetKey(this.natInterface)}=${this.localnetBefore}`]);
      }
      this.localnetBefore = undefined;
      this.localnetReady = false;
      this.pods.clear();
      this.authoritative = true;
      this.forgotten.clear();
      await this.release([...this.held.keys()]);
    });
  }

  /** The ports held open now, as `tcp4/0.0.0.0:8080`. */
  heldPorts(): string[] {
    return [...this.held.keys()].sort();
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async sync(): Promise<Omit<SyncReport, 'conflicts' | 'unheld'>> {
    const pods = [...this.pods.values()];
    const keepForeign = (id: string): boolean => !this.authoritative && !this.forgotten.has(id);
    const report: Omit<SyncReport, 'conflicts' | 'unheld'> = { chains: {}, deleted: [] };
    // The families touch separate tables (iptables, ip6tables), so they are written side by side.
    await Promise.all(
      this.families.map(async (family) => {
        const needed = pods.some((p) => hasHostPorts(p, [family]));
        let existing;
        try {
          existing = await saveTable(this.runner, family, 'nat');
        } catch (err) {
          // A node without IPv6 netfilter is fine as long as no pod has an IPv6 host port.
          if (family === 6 && !needed && err instanceof CommandFailedError) return;
          throw err;
        }
        const haveOurs = (existing?.chains ?? []).some((c) => c.startsWith('CDS-H'));
        if (!needed && !haveOurs) return;
        const rendered = renderNat({ family, pods, natInterface: this.natInterface, existing, keepForeign });
        await restore(this.runner, family, rendered.text);
        report.chains[family] = rendered.chains.length;
        report.deleted.push(...rendered.deleted);
        if (family === 4 && needed && this.natInterface !== undefined && !this.localnetReady) {
          await this.ensureLocalnet(this.natInterface);
          this.localnetReady = true;
        }
        this.logger?.debug({ family, chains: rendered.chains.length, deleted: rendered.deleted, where: this.runner.where }, 'host port rules synced');
      }),
    );
    return report;
  }

  /** route_localnet on the bridge, and the guard that keeps pods from using it against the node. */
  private async ensureLocalnet(natInterface: string): Promise<void> {
    const guard = renderGuard(await saveTable(this.runner, 4, 'filter'), natInterface);
    await restore(this.runner, 4, guard);
    const key = localnetKey(natInterface);
    const now = (await this.runner.run('sysctl', ['-n', key])).trim();
    if (now === '1') return;
    this.localnetBefore ??= now;
    await this.runner.run('sysctl', ['-q', '-w', `${key}=1`]);
  }

  private async holdOne(sandboxId: string, key: HeldPortKey): Promise<boolean> {
    const name = heldPortName(key);
    const current = this.held.get(name);
    if (current?.sandboxId === sandboxId) return false;
    if (current) {
      // Left by a pod whose removal could not finish; the pod is gone, so the port is free to pass on.
      this.held.delete(name);
      await current.port.close();
    }
    if (!this.holder) return false;
    const port = await this.holder.hold(key);
    this.held.set(name, { sandboxId, port });
    return true;
  }

  /** Opens the pod's ports it does not hold yet; on failure closes those and throws. */
  private async holdPorts(pod: PodHostports): Promise<string[]> {
    const opened: string[] = [];
    for (const key of portsToHold(pod)) {
      try {
        if (await this.holdOne(pod.sandboxId, key)) opened.push(heldPortName(key));
      } catch (err) {
        await this.release(opened);
        throw new HostPortInUseError(
          `cannot open host port ${heldPortName(key)} for pod sandbox ${pod.sandboxId.slice(0, 12)}: ${(err as Error).message}`,
          { cause: err },
        );
      }
    }
    return opened;
  }

  private async release(names: readonly string[]): Promise<void> {
    for (const name of names) {
      const h = this.held.get(name);
      if (!h) continue;
      this.held.delete(name);
      await h.port.close();
    }
  }

  /** Closes ports held for pods the manager no longer has, or for mappings a pod no longer has. */
  private async releaseUnowned(): Promise<void> {
    const wanted = new Set<string>();
    for (const pod of this.pods.values()) for (const key of portsToHold(pod)) wanted.add(heldPortName(key));
    await this.release([...this.held.keys()].filter((name) => !wanted.has(name)));
  }
}

/** The sysctl key in slash form, so interface names with dots (VLANs) keep them. */
function localnetKey(natInterface: string): string {
  return `net/ipv4/conf/${natInterface}/route_localnet`;
}
