// Every command the host port manager and kubenet's rules run (iptables, ip, sysctl) goes through
// a CommandRunner, so the same code can act on the shim's own network namespace or, through
// `ip netns exec`, on another one (the integration tests build whole nodes that way).
import { spawn } from 'node:child_process';
import { ShimError } from '../../errors';

/** A command that could not be run or exited non-zero. Reported to clients as INTERNAL. */
export class CommandFailedError extends ShimError {
  constructor(
    readonly command: string,
    /** The exit status; null when the process could not start or was killed. */
    readonly exitCode: number | null,
    readonly stderr: string,
    options?: { cause?: unknown; signal?: string | null },
  ) {
    const detail = stderr.trim().replace(/\s+/g, ' ').slice(0, 400);
    const how = exitCode !== null ? `exited ${exitCode}` : options?.signal ? `was killed (${options.signal})` : 'did not run';
    super(`${command} ${how}${detail ? `: ${detail}` : ''}`, options);
  }
}

export interface CommandRunner {
  /** Where the commands act, for logs: "host" or "netns <name>". */
  readonly where: string;
  /** Runs a command to completion; resolves with its stdout, rejects with CommandFailedError. */
  run(command: string, args: readonly string[], input?: string): Promise<string>;
}

/** Long enough for iptables waiting on the xtables lock; a hung command must not hang a pod. */
const COMMAND_TIMEOUT_MS = 30_000;

function runProcess(file: string, args: readonly string[], shown: string, input: string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, [...args], { stdio: ['pipe', 'pipe', 'pipe'], timeout: COMMAND_TIMEOUT_MS });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', (e) => reject(new CommandFailedError(shown, null, e.message, { cause: e })));
    child.on('close', (code, signal) => {
      const stderr = Buffer.concat(err).toString('utf8');
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new CommandFailedError(shown, code, stderr, { signal }));
    });
    // A command that exits before reading its input closes the pipe; its exit status tells.
    child.stdin.on('error', () => {});
    child.stdin.end(input ?? '');
  });
}

/** Runs commands in the shim's own namespaces. */
export const hostRunner: CommandRunner = {
  where: 'host',
  run: (command, args, input) => runProcess(command, args, command, input),
};

const NETNS_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Runs commands inside the named network namespace (`ip netns add` made it under /run/netns). */
export function netnsRunner(name: string): CommandRunner {
  if (!NETNS_NAME.test(name)) throw new TypeError(`not a network namespace name: ${JSON.stringify(name)}`);
  return {
    where: `netns ${name}`,
    run: (command, args, input) => runProcess('ip', ['netns', 'exec', name, command, ...args], command, input),
  };
}
