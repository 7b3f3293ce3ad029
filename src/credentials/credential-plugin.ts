// Running one credential provider plugin: a CredentialProviderRequest on stdin, a
// CredentialProviderResponse on stdout. The plugin's output is secret (it holds passwords), so
// no error here ever quotes it, nor its stderr.
import { spawn } from 'node:child_process';
import { errorMessage } from '../errors';
import { parseDuration } from '../util/duration';
import type { CredentialProviderPlugin } from './provider-config';

/** kubelet kills a plugin that has not answered within a minute. */
const PLUGIN_TIMEOUT_MS = 60_000;
const MAX_OUTPUT_BYTES = 1 << 20;

export type CacheKeyType = 'Image' | 'Registry' | 'Global';
const CACHE_KEY_TYPES: readonly CacheKeyType[] = ['Image', 'Registry', 'Global'];

export interface PluginCredential {
  username: string;
  password: string;
}

export interface PluginResponse {
  cacheKeyType: CacheKeyType;
  /** Undefined: use the provider's defaultCacheDuration. */
  cacheDurationMs: number | undefined;
  /** matchImages-style pattern -> credentials. */
  auth: Record<string, PluginCredential>;
}

export class PluginError extends Error {}

/** Parses and checks a plugin's stdout for a request made with `apiVersion` (pure). */
export function parsePluginResponse(stdout: string, apiVersion: string): PluginResponse {
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch {
    throw new PluginError('its output is not a JSON CredentialProviderResponse');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new PluginError('its output is not a JSON object');
  const r = doc as Record<string, unknown>;
  if (r.apiVersion !== apiVersion) {
    throw new PluginError(`its response has apiVersion ${JSON.stringify(r.apiVersion ?? null)}, expected ${apiVersion}`);
  }
  if (r.kind !== 'CredentialProviderResponse') {
    throw new PluginError(`its response has kind ${JSON.stringify(r.kind ?? null)}, expected CredentialProviderResponse`);
  }
  if (!CACHE_KEY_TYPES.includes(r.cacheKeyType as CacheKeyType)) {
    throw new PluginError(`its response has cacheKeyType ${JSON.stringify(r.cacheKeyType ?? null)}, expected one of ${CACHE_KEY_TYPES.join(', ')}`);
  }
  let cacheDurationMs: number | undefined;
  if (r.cacheDuration !== undefined && r.cacheDuration !== null) {
    if (typeof r.cacheDuration !== 'string') throw new PluginError('its response has a cacheDuration that is not a duration string');
    try {
      cacheDurationMs = parseDuration(r.cacheDuration);
    } catch (err) {
      throw new PluginError(`its response has a bad cacheDuration: ${errorMessage(err)}`);
    }
  }
  const auth: Record<string, PluginCredential> = {};
  const rawAuth = r.auth ?? {};
  if (typeof rawAuth !== 'object' || rawAuth === null || Array.isArray(rawAuth)) throw new PluginError('its response has an auth that is not a map');
  for (const [pattern, value] of Object.entries(rawAuth as Record<string, unknown>)) {
    const v = (value ?? {}) as Record<string, unknown>;
    if (typeof v !== 'object' || (v.username !== undefined && typeof v.username !== 'string') || (v.password !== undefined && typeof v.password !== 'string')) {
      throw new PluginError(`its response has a malformed auth entry for ${JSON.stringify(pattern)}`);
    }
    auth[pattern] = { username: (v.username as string | undefined) ?? '', password: (v.password as string | undefined) ?? '' };
  }
  return { cacheKeyType: r.cacheKeyType as CacheKeyType, cacheDurationMs, auth };
}

/** The request body a plugin reads on stdin. */
function pluginRequest(apiVersion: string, image: string): string {
  return JSON.stringify({ apiVersion, kind: 'CredentialProviderRequest', image });
}

/**
 * Runs the plugin for `image`. Its environment is ours plus the config's env; it is killed
 * when it runs past `timeoutMs`.
 */
export function execPlugin(plugin: CredentialProviderPlugin, image: string, timeoutMs = PLUGIN_TIMEOUT_MS): Promise<PluginResponse> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const e of plugin.env) env[e.name] = e.value;
  return new Promise<PluginResponse>((resolve, reject) => {
    let settled = false;
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      reject(new PluginError(`credential provider ${JSON.stringify(plugin.name)}: ${why}`));
    };
    // Its own process group, so a timeout kills whatever the plugin started too.
    const child = spawn(plugin.binaryPath, [...plugin.args], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const killAll = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => {
      killAll();
      fail(`timed out after ${timeoutMs / 1000}s and was killed`);
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => {
      size += d.length;
      if (size > MAX_OUTPUT_BYTES) {
        killAll();
        fail(`its output is larger than ${MAX_OUTPUT_BYTES} bytes`);
      } else chunks.push(d);
    });
    // stderr is drained but never kept: plugins may echo secrets there.
    child.stderr.resume();
    child.stdin.on('error', () => undefined);
    child.on('error', (err) => {
      clearTimeout(timer);
      fail(`cannot run ${plugin.binaryPath}: ${err.message}`);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (settled) return;
      if (code !== 0) return fail(signal ? `was killed by ${signal}` : `exited with code ${code}`);
      try {
        const response = parsePluginResponse(Buffer.concat(chunks).toString('utf8'), plugin.apiVersion);
        settled = true;
        resolve(response);
      } catch (err) {
        fail(errorMessage(err));
      }
    });
    child.stdin.end(pluginRequest(plugin.apiVersion, image));
  });
}
