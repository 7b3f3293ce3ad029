// The `cni` network plugin: the pod network is the first usable config in --cni-conf-dir,
// run with the plugin binaries in --cni-bin-dir. Loopback comes up in every pod first. The
// conf dir is looked at again (cheaply: names, sizes and times) on every status and set-up,
// so a config added, changed or removed is picked up without a restart.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { errorMessage, UnavailableError } from '../../errors';
import type { Logger } from '../../util/logger';
import { RequestDeadline } from '../../util/request-deadline';
import type { NetworkHost, PodDns, PodRef } from '../network-host';
import { NETWORK_NOT_READY, type NetworkPlugin, type NetworkStatus, type PodNetworkStatus } from '../network-plugin';
import { PodAttachments } from '../libcni/attachments';
import { DEFAULT_PLUGIN_TIMEOUT_MS } from '../libcni/runtime';
import { supportsCheck } from '../libcni/cni-version';
import { chooseNetwork, CONFIG_EXTENSIONS, declaredCapabilities, type NetworkConfigList } from '../libcni/cni-config';
import { podIpsOf } from '../libcni/result';
import type { CniRuntime } from '../libcni/runtime';

/** How long Status waits for a VERSION probe under way before it answers "asking". */
const STATUS_PROBE_WAIT_MS = 500;

interface CniPluginOptions {
  binDirs: readonly string[];
  confDir: string;
  cacheDir: string;
  timeoutMs?: number;
}

interface Selection {
  signature: string;
  /** The chosen plugins' binaries as they were (a replaced one is asked its versions again). */
  binaries: string;
  network: NetworkConfigList | undefined;
  problem: string | undefined;
  /** What was chosen, to log only changes. */
  outcome: string;
}

export class CniNetworkPlugin implements NetworkPlugin {
  readonly name: string = 'cni';
  readonly sandboxNetworkMode = 'none';
  private readonly attachments: PodAttachments;
  private selection: Selection | undefined;
  private warnedNoFirewall = '';

  constructor(
    private readonly options: CniPluginOptions,
    private readonly host: NetworkHost,
    private readonly log: Logger,
  ) {
    this.attachments = new PodAttachments({ binDirs: options.binDirs, cacheDir: options.cacheDir, timeoutMs: options.timeoutMs ?? DEFAULT_PLUGIN_TIMEOUT_MS }, host, log);
  }

  private get runtime(): CniRuntime {
    return this.attachments.runtime;
  }

  async status(signal?: AbortSignal): Promise<NetworkStatus> {
    // A VERSION probe under way usually answers in milliseconds; a hung plugin must not hold Status.
    // Its timer ends with the wait: AbortSignal.timeout's would fire after every Status call.
    const deadline = new RequestDeadline(STATUS_PROBE_WAIT_MS, signal);
    let problem: string | undefined;
    try {
      problem = await this.settledProblem(deadline.signal);
    } finally {
      deadline.end();
    }
    return problem === undefined ? { ready: true } : { ready: false, reason: NETWORK_NOT_READY, message: problem };
  }

  async setUpPod(pod: PodRef, dns: PodDns | undefined, signal?: AbortSignal): Promise<PodNetworkStatus> {
    const problem = await this.settledProblem(signal);
    if (problem !== undefined) throw new UnavailableError(`the pod network is not ready: ${problem}`);
    return { ips: podIpsOf(await this.attachments.setUp(this.selection!.network!, pod, dns, signal)) };
  }

  async tearDownPod(pod: PodRef, signal?: AbortSignal): Promise<void> {
    // The network chosen is the fallback DEL's where the cache has none of the pod's: wait for
    // the VERSION probes (a StopPodSandbox may be the first call after a restart).
    await this.settledProblem(signal);
    await this.attachments.tearDown(pod, this.selection?.network, signal);
  }

  async podStatus(pod: PodRef): Promise<PodNetworkStatus> {
    return { ips: this.attachments.ipsOf(pod.sandboxId) };
  }

  /** Runs CHECK for a pod set up earlier (spec 0.4.0 and later): throws what a plugin finds wrong. */
  checkPod(pod: PodRef, signal?: AbortSignal): Promise<void> {
    return this.attachments.check(pod, signal);
  }

  podCidrsChanged(): void {}

  /**
   * After a restart, CHECK the network of every pod that still runs (spec 0.4.0 and later):
   * what the plugins find wrong while the shim was away is logged, once per pod.
   */
  async start(): Promise<void> {
    let checked = 0;
    const failed: string[] = [];
    for (const sandboxId of await this.host.runningSandboxes()) {
      const entry = this.attachments.podNetworkEntry(sandboxId);
      if (!entry || !supportsCheck(entry.result.cniVersion)) continue;
      checked++;
      try {
        await this.attachments.check({ podName: '', podNamespace: '', podUid: '', sandboxId, annotations: {} });
      } catch (err) {
        failed.push(sandboxId);
        this.log.warn({ sandboxId, error: errorMessage(err) }, 'CNI CHECK of a running pod failed');
      }
    }
    if (checked > 0) this.log.info({ checked, failed: failed.length }, 'CNI networks of running pods checked');
  }

  async close(): Promise<void> {}

  /**
   * Why pods cannot be networked, after the VERSION probes the choice started are in (each is
   * bounded by the plugin timeout) or `signal` stops the wait; undefined when they can.
   */
  private async settledProblem(signal?: AbortSignal): Promise<string | undefined> {
    this.problem();
    try {
      await this.runtime.probesSettled(signal);
    } catch {
      // gave up waiting: the answer says the probe is still under way
    }
    return this.problem();
  }

  /** Why pods cannot be networked now; undefined when they can. */
  private problem(): string | undefined {
    const selection = this.select();
    if (!selection.network) return selection.problem;
    if (!this.runtime.binaryOf('loopback')) return `the loopback plugin is not in ${this.options.binDirs.join(', ')}`;
    const wantsRanges = selection.network.plugins.some((p) => declaredCapabilities(p).has('ipRanges'));
    if (wantsRanges && this.host.podCidrs().length === 0) {
      return `${selection.network.source} takes the pod CIDR (ipRanges) and none has been given yet (UpdateRuntimeConfig)`;
    }
    return undefined;
  }

  private select(): Selection {
    const signature = this.confDirSignature();
    if (this.selection?.signature === signature && this.selection.binaries === this.binariesOf(this.selection.network)) return this.selection;
    const files = this.readConfDir();
    const choice = chooseNetwork(files, (type) => this.runtime.binaryOf(type) !== undefined);
    let { network } = choice;
    let problem = choice.network ? undefined : choice.problem;
    // Settled: the choice holds until the conf dir changes. Not while a plugin's VERSION answer
    // is awaited or failed: the next look asks again (a replaced binary is asked again too).
    let settled = true;
    let probing = false;
    if (network) {
      const list = network;
      const answers = list.plugins.map((p) => ({ type: p.type, answer: this.runtime.supportedVersions(p.type, list.cniVersion) }));
      const asking = answers.filter((a) => a.answer === 'asking').map((a) => a.type);
      const failed = answers.flatMap((a) => (typeof a.answer === 'object' && 'failure' in a.answer ? [`${a.type} (${a.answer.failure})`] : []));
      const unsupported = answers.filter((a) => typeof a.answer === 'object' && 'supported' in a.answer && !a.answer.supported.includes(list.cniVersion)).map((a) => a.type);
      probing = asking.length > 0;
      if (probing) problem = `${list.source}: asking ${asking.join(', ')} which CNI versions they support`;
      else if (failed.length > 0) problem = `${list.source}: no answer to VERSION from ${failed.join(', ')}`;
      else if (unsupported.length > 0) problem = `${list.source}: cniVersion ${list.cniVersion} is not supported by ${unsupported.join(', ')}`;
      if (problem !== undefined) {
        network = undefined;
        settled = false;
      }
    }
    const outcome = network ? `${network.source}:${network.bytes}` : `problem:${problem}`;
    const changed = outcome !== this.selection?.outcome;
    this.selection = { signature: settled ? signature : '', binaries: this.binariesOf(network), network, problem, outcome };
    if (!changed) return this.selection;
    if (network) {
      this.log.info({ network: network.name, file: network.source, cniVersion: network.cniVersion, plugins: network.plugins.map((p) => p.type), skipped: choice.skipped }, 'CNI network chosen');
      this.warnIfNoForwardAccept(network);
    } else if (!probing) {
      // (A probe under way is not a problem yet: its answer makes the next choice.)
      this.log.warn({ confDir: this.options.confDir, problem }, 'no usable CNI network');
    }
    return this.selection;
  }

  /**
   * Docker sets the FORWARD policy to DROP and bridged traffic passes iptables here: a network
   * whose plugins accept nothing leaves pods unable to reach each other. Said once per network.
   */
  private warnIfNoForwardAccept(network: NetworkConfigList): void {
    if (network.plugins.some((p) => p.type === 'firewall') || this.warnedNoFirewall === network.source) return;
    this.warnedNoFirewall = network.source;
    this.log.warn(
      { network: network.name, file: network.source },
      'this CNI network has no firewall plugin; with Docker\'s FORWARD policy of DROP, pod traffic may be dropped unless another rule accepts it',
    );
  }

  private confFiles(): string[] {
    try {
      return fs.readdirSync(this.options.confDir).filter((n) => CONFIG_EXTENSIONS.some((ext) => n.endsWith(ext)));
    } catch {
      return [];
    }
  }

  private binariesOf(network: NetworkConfigList | undefined): string {
    return network ? network.plugins.map((p) => this.runtime.binaryIdentity(p.type)).join('|') : '';
  }

  private confDirSignature(): string {
    const parts = this.confFiles().map((name) => {
      try {
        const st = fs.statSync(path.join(this.options.confDir, name));
        return `${name}:${st.size}:${st.mtimeMs}`;
      } catch {
        return `${name}:gone`;
      }
    });
    // Binaries may be installed after the config: a missing one is looked for again.
    const pending = this.selection && !this.selection.network ? `:${Date.now() >> 12}` : '';
    return parts.sort().join('|') + pending;
  }

  private readConfDir(): Array<{ name: string; text: string }> {
    const out: Array<{ name: string; text: string }> = [];
    for (const name of this.confFiles()) {
      try {
        out.push({ name, text: fs.readFileSync(path.join(this.options.confDir, name), 'utf8') });
      } catch (err) {
        this.log.debug({ file: name, error: errorMessage(err) }, 'cannot read a CNI config file');
      }
    }
    return out;
  }
}
