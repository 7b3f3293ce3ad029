// --config FILE: a YAML mapping whose keys are the flag names (network-plugin: kubenet). The
// file only supplies values; flags.ts checks them exactly as it checks flags, so a bad value
// reads the same wherever it came from. Pure: the caller reads the file.

/** Keys a file may not set: they choose what the command does, not how the shim runs. */
const COMMAND_ONLY = new Set(['config', 'help', 'version', 'buildinfo']);

/** Flags whose value is a comma-separated list; a YAML list is accepted for them too. */
const LIST_FLAGS = new Set(['cni-bin-dir']);

/**
 * The settings in `text`, as flag name → the string the flag would have carried. Throws an
 * Error whose message says which key is wrong and why.
 */
export function parseConfigFile(text: string, knownFlags: ReadonlySet<string>): Map<string, string> {
  // Loaded only when a config file is given: start-up time is measured.
  const { parseDocument } = require('yaml') as typeof import('yaml');
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  const problem = doc.errors[0];
  if (problem) throw new Error(`not valid YAML: ${problem.message.split('\n')[0]}`);
  const root: unknown = doc.toJS();
  if (root === null || root === undefined) return new Map();
  if (typeof root !== 'object' || Array.isArray(root)) throw new Error('must be a mapping of flag names to values');

  const settings = new Map<string, string>();
  for (const [key, value] of Object.entries(root as Record<string, unknown>)) {
    const shown = JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key);
    if (COMMAND_ONLY.has(key)) throw new Error(`${shown} can only be given on the command line`);
    if (!knownFlags.has(key)) throw new Error(`unknown key ${shown} (keys are flag names without the dashes, e.g. network-plugin)`);
    settings.set(key, settingText(key, value));
  }
  return settings;
}

function settingText(key: string, value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  // A switch (ipv6-dual-stack: true); flags.ts refuses it for a setting that is not one.
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && LIST_FLAGS.has(key) && value.every((v) => typeof v === 'string')) return value.join(',');
  if (value === null) throw new Error(`${key} has no value`);
  const kind = Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'a mapping' : `a ${typeof value}`;
  throw new Error(`${key} must be a single value like the flag's, not ${kind}`);
}
