// The floors' processes (grpc-floor.ts, stream-floor.ts): each floor runs from its own compiled
// file in a process of its own, so its CPU is read apart from the bench's and the shim's.
import { spawn, type ChildProcess } from 'node:child_process';

/** Starts `node <file> <args>` and resolves with the first line it writes to stdout (it writes one once ready). */
export async function startFloorProcess(file: string, args: readonly string[], what: string): Promise<{ child: ChildProcess; ready: string }> {
  const child = spawn(process.execPath, [file, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${what} exited ${code} before it was ready`)));
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
  });
  child.removeAllListeners('exit');
  return { child, ready };
}

/** Ends a floor's process with SIGTERM and waits for its exit. */
export async function stopFloorProcess(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
  child.kill('SIGTERM');
  await exited;
}
