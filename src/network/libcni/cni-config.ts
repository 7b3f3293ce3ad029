// Network configurations in the CNI conf dir, and the choice of the pod network among them
// (pure: file names and texts in, a network or the reason there is none out). As libcni and
// kubelet do: `.conf`, `.conflist` and `.json` files in lexical order; the first that parses
// and whose plugin binaries all exist is the network; a single plugin's `.conf` is read as a
// list of one.
import { isSpecVersion, isSupportedVersion, isVersion, NEWEST_SUPPORTED, OLDEST_SPEC, OLDEST_SUPPORTED } from './cni-version';

/** One plugin's configuration, as the file gives it (its own keys are the plugin's business). */
export type PluginConf = Readonly<Record<string, unknown>> & { readonly type: string };

export interface NetworkConfigList {
  name: string;
  cniVersion: string;
  plugins: PluginConf[];
  /** The file it came from, for logs and the cache. */
  source: string;
  /** The file's text, as libcni caches it. */
  bytes: string;
}

export const CONFIG_EXTENSIONS = ['.conf', '.conflist', '.json'];

class CniConfigError extends Error {}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function pluginOf(raw: unknown, where: string): PluginConf {
  if (!isRecord(raw)) throw new CniConfigError(`${where} is not an object`);
  if (typeof raw.type !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(raw.type)) {
    throw new CniConfigError(`${where}.type must be a plugin binary name`);
  }
  return raw as PluginConf;
}

/**
 * Parses one file's text into a network list; throws CniConfigError saying what is wrong. A
 * config from the conf dir must have a version we run ADD with; a cached one (`cached`), whose
 * only use is DEL, may have any version the spec has had (libcni caches cri-dockerd's loopback
 * as 0.2.0).
 */
export function parseNetworkConfig(fileName: string, text: string, versions: 'supported' | 'cached' = 'supported'): NetworkConfigList {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CniConfigError(`${fileName}: not JSON (${(err as Error).message})`);
  }
  if (!isRecord(doc)) throw new CniConfigError(`${fileName}: not a JSON object`);
  const cniVersion = typeof doc.cniVersion === 'string' ? doc.cniVersion : '';
  if (!isVersion(cniVersion)) throw new CniConfigError(`${fileName}: cniVersion ${JSON.stringify(doc.cniVersion ?? null)} is not a version`);
  const oldest = versions === 'cached' ? OLDEST_SPEC : OLDEST_SUPPORTED;
  if (!(versions === 'cached' ? isSpecVersion : isSupportedVersion)(cniVersion)) {
    throw new CniConfigError(`${fileName}: cniVersion ${cniVersion} is not supported (${oldest} to ${NEWEST_SUPPORTED})`);
  }
  if (typeof doc.name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(doc.name)) {
    throw new CniConfigError(`${fileName}: name must be letters, digits, '.', '_' and '-'`);
  }
  if (Array.isArray(doc.plugins)) {
    if (doc.plugins.length === 0) throw new CniConfigError(`${fileName}: plugins is empty`);
    const plugins = doc.plugins.map((p, i) => pluginOf(p, `${fileName}: plugins[${i}]`));
    return { name: doc.name, cniVersion, plugins, source: fileName, bytes: text };
  }
  if (fileName.endsWith('.conflist')) throw new CniConfigError(`${fileName}: a .conflist needs a plugins list`);
  // A single plugin's configuration: a list of one.
  const { name: _name, cniVersion: _version, ...rest } = doc;
  return { name: doc.name, cniVersion, plugins: [pluginOf(rest, fileName)], source: fileName, bytes: text };
}

type NetworkChoice = { network: NetworkConfigList; skipped: string[] } | { network: undefined; problem: string; skipped: string[] };

/**
 * The pod network among the conf dir's files: the first, in lexical order, that parses and
 * whose binaries `binaryExists` finds. `skipped` says why each earlier file was passed over.
 */
export function chooseNetwork(files: ReadonlyArray<{ name: string; text: string }>, binaryExists: (type: string) => boolean): NetworkChoice {
  const skipped: string[] = [];
  const candidates = files.filter((f) => CONFIG_EXTENSIONS.some((ext) => f.name.endsWith(ext))).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const file of candidates) {
    let network: NetworkConfigList;
    try {
      network = parseNetworkConfig(file.name, file.text);
    } catch (err) {
      skipped.push((err as Error).message);
      continue;
    }
    const missing = [...new Set(network.plugins.map((p) => p.type))].filter((t) => !binaryExists(t));
    if (missing.length > 0) {
      skipped.push(`${file.name}: plugin binaries not found: ${missing.join(', ')}`);
      continue;
    }
    return { network, skipped };
  }
  const problem = candidates.length === 0 ? 'no network config found in the CNI conf dir' : `no usable network config: ${skipped.join('; ')}`;
  return { network: undefined, problem, skipped };
}

/** The runtime capabilities a plugin declares (`"capabilities": {"portMappings": true}`). */
export function declaredCapabilities(plugin: PluginConf): Set<string> {
  const caps = plugin.capabilities;
  if (!isRecord(caps)) return new Set();
  return new Set(Object.entries(caps).filter(([, on]) => on === true).map(([k]) => k));
}
