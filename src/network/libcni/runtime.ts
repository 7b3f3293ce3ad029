// Runs a network config list against one container, as libcni does: ADD through the plugins in
// order, each given the previous one's result; DEL in reverse order with the result ADD left;
// CHECK where the list's version has it. A failed ADD is undone (DEL of the whole list) before
// its error is passed on, so no address stays held and no interface or rule is left.
import * as fs from 'node:fs';
import type { CapabilityArgs } from './args';
import { runtimeConfigFor } from './args';
import { ResultCache } from './cni-cache';
import { declaredCapabilities, type NetworkConfigList, type PluginConf } from './cni-config';
import { CniPluginError, execPlugin, findPluginBinary, type PluginCall } from './plugin-exec';
import { parseResult, type CniResult } from './result';
import { supportsCheck } from './cni-version';
import { errorMessage } from '../../errors';
import { abortable } from '../../util/abortable';

export interface Attachment {
  containerId: string;
  /** '' when the namespace is gone (DEL). */
  netns: string;
  ifName: string;
  args: Array<[string, string]>;
  capabilityArgs: CapabilityArgs;
}

/** How long one plugin call may take (kubelet's whole RunPodSandbox has 2 min or more). */
export const DEFAULT_PLUGIN_TIMEOUT_MS = 60_000;

export interface CniRuntimeOptions {
  binDirs: readonly string[];
  cacheDir: string;
  /** How long one plugin call may take. */
  timeoutMs: number;
}

/** One plugin's stdin: its own config, with the list's name and version and what the runtime adds (pure). */
export function pluginStdin(network: Pick<NetworkConfigList, 'name' | 'cniVersion'>, plugin: PluginConf, capabilityArgs: CapabilityArgs, prevResult: CniResult | undefined): string {
  const conf: Record<string, unknown> = { ...plugin, name: network.name, cniVersion: network.cniVersion };
  const runtimeConfig = runtimeConfigFor(declaredCapabilities(plugin), capabilityArgs);
  if (runtimeConfig) conf.runtimeConfig = runtimeConfig;
  else delete conf.runtimeConfig;
  if (prevResult) conf.prevResult = prevResult;
  else delete conf.prevResult;
  return JSON.stringify(conf);
}

/** A VERSION probe that failed (no answer, not JSON) is asked again after this long. */
const VERSION_RETRY_MS = 5_000;

/** What one binary said of the versions it supports, asked as one spec version. */
interface VersionProbe {
  /** The binary as it was when asked: a replaced binary is asked again. */
  identity: string;
  /** Undefined while the probe runs, and after a failed one. */
  supported: string[] | undefined;
  /** Why the last probe failed, and when. */
  failure: { message: string; atMs: number } | undefined;
}

/** A plugin's answer to VERSION: what it supports, or why that is not known. */
type VersionAnswer = { supported: string[] } | { failure: string } | 'asking';

/** A binary's identity for the probe cache: a replaced or rebuilt file differs in one of these. */
function identityOf(binary: string): string | undefined {
  try {
    const st = fs.statSync(binary);
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  } catch {
    return undefined;
  }
}

export class CniRuntime {
  readonly cache: ResultCache;
  private readonly versions = new Map<string, VersionProbe>();
  private readonly probesUnderWay = new Set<Promise<void>>();

  constructor(private readonly options: CniRuntimeOptions) {
    this.cache = new ResultCache(options.cacheDir);
  }

  binaryOf(type: string): string | undefined {
    return findPluginBinary(this.options.binDirs, type);
  }

  /** The plugin binary's path and identity, '' when there is none. */
  binaryIdentity(type: string): string {
    const binary = this.binaryOf(type);
    return binary ? `${binary}:${identityOf(binary) ?? 'gone'}` : '';
  }

  /**
   * The spec versions a plugin binary says it supports, from its VERSION answer, kept per binary
   * identity (path, inode, size, times) so that a replaced binary is asked again. The probe runs
   * in the background (never blocking the event loop for the plugin timeout): 'asking' until it
   * is in (`probesSettled` waits for it). A failed probe is not kept: it is asked again after
   * VERSION_RETRY_MS.
   */
  supportedVersions(type: string, asVersion: string): VersionAnswer {
    const binary = this.binaryOf(type);
    const identity = binary === undefined ? undefined : identityOf(binary);
    if (binary === undefined || identity === undefined) return { failure: `no binary in ${this.options.binDirs.join(', ')}` };
    const key = `${binary}\0${asVersion}`;
    const known = this.versions.get(key);
    if (known && known.identity === identity) {
      if (known.supported) return { supported: known.supported };
      if (!known.failure) return 'asking';
      if (Date.now() - known.failure.atMs < VERSION_RETRY_MS) return { failure: known.failure.message };
    }
    const probe: VersionProbe = { identity, supported: undefined, failure: undefined };
    this.versions.set(key, probe);
    const call: PluginCall = { command: 'VERSION', containerId: '', netns: '', ifName: '', args: [], binDirs: this.options.binDirs };
    const running: Promise<void> = execPlugin(binary, type, call, JSON.stringify({ cniVersion: asVersion }), this.options.timeoutMs)
      .then((out) => {
        const listed = (out as { supportedVersions?: unknown } | undefined)?.supportedVersions;
        if (!Array.isArray(listed)) throw new Error('its VERSION answer lists no supportedVersions');
        probe.supported = listed.filter((v): v is string => typeof v === 'string');
      })
      .catch((err: unknown) => {
        probe.failure = { message: errorMessage(err), atMs: Date.now() };
      })
      .finally(() => this.probesUnderWay.delete(running));
    this.probesUnderWay.add(running);
    return 'asking';
  }

  /** Resolves when no VERSION probe is under way (each is bounded by the plugin timeout), or rejects when `signal` gives up. */
  async probesSettled(signal?: AbortSignal): Promise<void> {
    while (this.probesUnderWay.size > 0) await abortable(Promise.all(this.probesUnderWay), signal);
  }

  private call(command: PluginCall['command'], att: Attachment): PluginCall {
    return { command, containerId: att.containerId, netns: att.netns, ifName: att.ifName, args: att.args, binDirs: this.options.binDirs };
  }

  private async run(network: NetworkConfigList, plugin: PluginConf, call: PluginCall, capabilityArgs: CapabilityArgs, prev: CniResult | undefined, signal?: AbortSignal): Promise<unknown> {
    const binary = this.binaryOf(plugin.type);
    if (!binary) throw new CniPluginError(plugin.type, undefined, `no binary in ${this.options.binDirs.join(', ')}`);
    return execPlugin(binary, plugin.type, call, pluginStdin(network, plugin, capabilityArgs, prev), this.options.timeoutMs, signal);
  }

  /** ADD through the list; the result is cached. A failure undoes what was done and rethrows. */
  async add(network: NetworkConfigList, att: Attachment, signal?: AbortSignal): Promise<CniResult> {
    const cacheEntry = {
      kind: 'cniCacheV1' as const,
      containerId: att.containerId,
      networkName: network.name,
      ifName: att.ifName,
      config: Buffer.from(network.bytes).toString('base64'),
      cniArgs: att.args,
      capabilityArgs: att.capabilityArgs,
    };
    this.cache.write(cacheEntry);
    let prev: CniResult | undefined;
    try {
      for (const [i, plugin] of network.plugins.entries()) {
        const out = await this.run(network, plugin, this.call('ADD', att), att.capabilityArgs, prev, signal);
        if (out !== undefined) prev = parseResult(out, network.cniVersion);
        // What the next plugin is given, on disk before it runs: a DEL after a kill -9 passes
        // it on, so a plugin cut short (firewall, portmap) still finds the addresses it used.
        if (prev && i < network.plugins.length - 1) this.cache.write({ ...cacheEntry, partialResult: prev });
      }
    } catch (err) {
      // Undo without the caller's signal: a cancelled ADD must still be released. A plugin that
      // cannot even read its config fails DEL too; what the others took is released all the same.
      // When the undo fails, the cache entry stays: it is all a later DEL (the caller's teardown,
      // kubelet's retry) has to go on.
      await this.del(network, att, prev).catch(() => undefined);
      throw err;
    }
    const result = prev ?? { cniVersion: network.cniVersion, interfaces: [], ips: [], routes: [], dns: {} };
    this.cache.write({ ...cacheEntry, result });
    return result;
  }

  /**
   * DEL through the list in reverse. Every plugin is asked even when one before it failed (one
   * broken plugin must not keep the others' addresses and interfaces); the cache entry goes
   * once all agreed, else the first failure is thrown and a later DEL tries again.
   */
  async del(network: NetworkConfigList, att: Attachment, result: CniResult | undefined, signal?: AbortSignal): Promise<void> {
    const prev = result && supportsCheck(network.cniVersion) ? result : undefined;
    let firstFailure: unknown;
    for (const plugin of [...network.plugins].reverse()) {
      try {
        await this.run(network, plugin, this.call('DEL', att), att.capabilityArgs, prev, signal);
      } catch (err) {
        firstFailure ??= err;
      }
    }
    if (firstFailure !== undefined) throw firstFailure;
    this.cache.remove(network.name, att.containerId, att.ifName);
  }

  /** CHECK through the list (spec 0.4.0 and later); throws the first plugin's complaint. */
  async check(network: NetworkConfigList, att: Attachment, result: CniResult, signal?: AbortSignal): Promise<void> {
    if (!supportsCheck(network.cniVersion)) return;
    for (const plugin of network.plugins) {
      await this.run(network, plugin, this.call('CHECK', att), att.capabilityArgs, result, signal);
    }
  }
}
