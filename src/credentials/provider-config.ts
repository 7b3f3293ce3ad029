// kubelet's CredentialProviderConfig (kubelet.config.k8s.io/v1), from YAML or JSON, checked
// as kubelet checks it. Parsing is pure; loadCredentialProviderConfig adds the file and the
// plugin binaries, so a broken config stops start-up with a message naming what is wrong.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { errorMessage } from '../errors';
import { parseDuration } from '../util/duration';
import { matchPatternProblem } from './match';

export const CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1';
export const CONFIG_KIND = 'CredentialProviderConfig';
/** Plugin protocol versions kubelet v1 configs accept; the plugin answers in the one it was asked. */
export const PLUGIN_API_VERSIONS = [
  'credentialprovider.kubelet.k8s.io/v1',
  'credentialprovider.kubelet.k8s.io/v1beta1',
  'credentialprovider.kubelet.k8s.io/v1alpha1',
] as const;

export interface CredentialProviderSpec {
  readonly name: string;
  readonly matchImages: readonly string[];
  readonly defaultCacheDurationMs: number;
  readonly apiVersion: string;
  readonly args: readonly string[];
  readonly env: ReadonlyArray<{ name: string; value: string }>;
}

/** A provider whose binary was found: what the shim runs. */
export interface CredentialProviderPlugin extends CredentialProviderSpec {
  readonly binaryPath: string;
}

export class CredentialConfigError extends Error {}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function stringList(v: unknown, field: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) throw new CredentialConfigError(`${field} must be a list of strings`);
  return v as string[];
}

function parseProvider(raw: unknown, at: string): CredentialProviderSpec {
  if (!isObject(raw)) throw new CredentialConfigError(`${at} must be an object`);
  const known = new Set(['name', 'matchImages', 'defaultCacheDuration', 'apiVersion', 'args', 'env', 'tokenAttributes']);
  for (const key of Object.keys(raw)) {
    if (!known.has(key)) throw new CredentialConfigError(`${at}: unknown field ${JSON.stringify(key)}`);
  }
  const name = raw.name;
  if (typeof name !== 'string' || name.trim() === '') throw new CredentialConfigError(`${at}.name is required`);
  if (name.includes('/') || name.includes(' ') || name === '.' || name === '..') {
    throw new CredentialConfigError(`${at}.name ${JSON.stringify(name)} must be a plain file name (no "/", spaces, "." or "..")`);
  }
  const where = `${at} (${name})`;
  if (raw.tokenAttributes !== undefined) {
    throw new CredentialConfigError(`${where}.tokenAttributes: service account tokens are not supported by cri-docker-shim`);
  }
  const matchImages = stringList(raw.matchImages, `${where}.matchImages`);
  if (matchImages.length === 0) throw new CredentialConfigError(`${where}.matchImages must list at least one image pattern`);
  matchImages.forEach((p, i) => {
    const problem = matchPatternProblem(p);
    if (problem) throw new CredentialConfigError(`${where}.matchImages[${i}] ${JSON.stringify(p)} ${problem}`);
  });
  if (typeof raw.defaultCacheDuration !== 'string') {
    throw new CredentialConfigError(`${where}.defaultCacheDuration is required (a duration such as "12h" or "0s")`);
  }
  let defaultCacheDurationMs: number;
  try {
    defaultCacheDurationMs = parseDuration(raw.defaultCacheDuration);
  } catch (err) {
    throw new CredentialConfigError(`${where}.defaultCacheDuration: ${errorMessage(err)}`);
  }
  const apiVersion = raw.apiVersion;
  if (typeof apiVersion !== 'string' || !(PLUGIN_API_VERSIONS as readonly string[]).includes(apiVersion)) {
    throw new CredentialConfigError(`${where}.apiVersion must be one of ${PLUGIN_API_VERSIONS.join(', ')}`);
  }
  const args = stringList(raw.args, `${where}.args`);
  const envRaw = raw.env ?? [];
  if (!Array.isArray(envRaw)) throw new CredentialConfigError(`${where}.env must be a list of {name, value}`);
  const env = envRaw.map((e: unknown, i) => {
    if (!isObject(e) || typeof e.name !== 'string' || e.name === '' || e.name.includes('=')) {
      throw new CredentialConfigError(`${where}.env[${i}].name is required (without "=")`);
    }
    if (e.value !== undefined && typeof e.value !== 'string') throw new CredentialConfigError(`${where}.env[${i}].value must be a string`);
    return { name: e.name, value: (e.value as string | undefined) ?? '' };
  });
  return { name, matchImages, defaultCacheDurationMs, apiVersion, args, env };
}

/** Parses a config document (YAML is a superset of JSON, so one parser reads both). */
export function parseCredentialProviderConfig(text: string): CredentialProviderSpec[] {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new CredentialConfigError(`not valid YAML or JSON: ${errorMessage(err).split('\n')[0]}`);
  }
  if (!isObject(doc)) throw new CredentialConfigError('must be an object with apiVersion, kind and providers');
  if (doc.apiVersion !== CONFIG_API_VERSION) {
    throw new CredentialConfigError(`apiVersion must be ${CONFIG_API_VERSION} (got ${JSON.stringify(doc.apiVersion ?? null)})`);
  }
  if (doc.kind !== CONFIG_KIND) throw new CredentialConfigError(`kind must be ${CONFIG_KIND} (got ${JSON.stringify(doc.kind ?? null)})`);
  if (!Array.isArray(doc.providers) || doc.providers.length === 0) {
    throw new CredentialConfigError('providers must list at least one credential provider');
  }
  const providers = doc.providers.map((p: unknown, i) => parseProvider(p, `providers[${i}]`));
  const seen = new Set<string>();
  for (const p of providers) {
    if (seen.has(p.name)) throw new CredentialConfigError(`providers: name ${JSON.stringify(p.name)} is used twice`);
    seen.add(p.name);
  }
  return providers;
}

/** Reads the config file and finds each provider's binary in binDir; errors name the file. */
export function loadCredentialProviderConfig(configPath: string, binDir: string): CredentialProviderPlugin[] {
  let text: string;
  try {
    text = fs.readFileSync(configPath, 'utf8');
  } catch (err) {
    throw new CredentialConfigError(`--image-credential-provider-config ${configPath}: cannot read: ${errorMessage(err)}`);
  }
  let specs: CredentialProviderSpec[];
  try {
    specs = parseCredentialProviderConfig(text);
  } catch (err) {
    throw new CredentialConfigError(`--image-credential-provider-config ${configPath}: ${errorMessage(err)}`);
  }
  return specs.map((spec) => {
    const binaryPath = path.join(binDir, spec.name);
    try {
      fs.accessSync(binaryPath, fs.constants.X_OK);
      if (!fs.statSync(binaryPath).isFile()) throw new Error('not a regular file');
    } catch (err) {
      throw new CredentialConfigError(
        `--image-credential-provider-config ${configPath}: provider ${JSON.stringify(spec.name)}: no executable ${binaryPath} in --image-credential-provider-bin-dir (${errorMessage(err)})`,
      );
    }
    return { ...spec, binaryPath };
  });
}
