// Runs one CNI plugin binary the way the spec says: the command and the container's details
// in CNI_* environment variables, the network configuration on stdin, the result (or a
// {code, msg, details} error) on stdout. A plugin that runs past its time is killed.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PluginFailedError } from '../../errors';
import { cniArgsEnv } from './args';

type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION';

export interface PluginCall {
  command: CniCommand;
  containerId: string;
  /** The network namespace path; '' when it is gone (DEL only). */
  netns: string;
  ifName: string;
  args: ReadonlyArray<[string, string]>;
  /** Directories searched for plugins, also handed to the plugin (chained plugins call IPAM ones). */
  binDirs: readonly string[];
}

/** A plugin that failed: its own message, as the spec's error document carries it. */
export class CniPluginError extends PluginFailedError {
  constructor(
    readonly pluginType: string,
    readonly code: number | undefined,
    message: string,
  ) {
    super(`CNI plugin ${pluginType} failed: ${message}`);
  }
}

/** The plugin binary for `type` in the first of `binDirs` that has it; undefined if none does. */
export function findPluginBinary(binDirs: readonly string[], type: string): string | undefined {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(type)) return undefined;
  for (const dir of binDirs) {
    const candidate = path.join(dir, type);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

function errorMessageOf(stdout: string, stderr: string, code: number | null, signal: NodeJS.Signals | null): { code: number | undefined; message: string } {
  try {
    const doc = JSON.parse(stdout) as { code?: unknown; msg?: unknown; details?: unknown };
    if (typeof doc.msg === 'string') {
      const details = typeof doc.details === 'string' && doc.details !== '' ? `: ${doc.details}` : '';
      return { code: typeof doc.code === 'number' ? doc.code : undefined, message: `${doc.msg}${details}` };
    }
  } catch {
    // not the spec's error document
  }
  const text = (stderr.trim() || stdout.trim()).slice(0, 500);
  const how = signal ? `killed by ${signal}` : `exited ${code}`;
  return { code: undefined, message: text === '' ? how : `${how}: ${text}` };
}

/** Runs the plugin; resolves with its parsed stdout (undefined when it printed nothing). */
export function execPlugin(binary: string, type: string, call: PluginCall, stdin: string, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
  // The shim's own CNI_* variables (if someone set any) must not leak into a plugin's call.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CNI_')));
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    CNI_COMMAND: call.command,
    CNI_CONTAINERID: call.containerId,
    CNI_NETNS: call.netns,
    CNI_IFNAME: call.ifName,
    CNI_ARGS: cniArgsEnv(call.args),
    CNI_PATH: call.binDirs.join(':'),
  };
  return new Promise((resolve, reject) => {
    // A group of its own, so a kill also reaches what the plugin started (an IPAM plugin).
    const child = spawn(binary, [], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let why: string | undefined;
    const kill = (reason: string): void => {
      why ??= reason;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => kill(`did not finish ${call.command} within ${timeoutMs} ms`), timeoutMs);
    const onAbort = (): void => kill(`${call.command} was cancelled`);
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (err) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(new CniPluginError(type, undefined, err.message));
    });
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (why) return reject(new CniPluginError(type, undefined, why));
      if (code !== 0) {
        const failure = errorMessageOf(stdout, stderr, code, sig);
        return reject(new CniPluginError(type, failure.code, failure.message));
      }
      if (stdout.trim() === '') return resolve(undefined);
      try {
        resolve(JSON.parse(stdout));
      } catch {
        reject(new CniPluginError(type, undefined, `printed something that is not JSON: ${stdout.slice(0, 200)}`));
      }
    });
    child.stdin.on('error', () => undefined); // a plugin may exit before reading its config
    child.stdin.end(stdin);
  });
}
