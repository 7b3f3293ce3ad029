// Dialing 127.0.0.1:<port> inside a pod's network namespace, for port forward. Node cannot
// enter a namespace itself, so a relay process does: the static C program port-relay.c (a few
// hundred KiB of memory, where a Node process took some 43 MiB), one per pod, shared by all its
// port-forward sessions, started at the first connection and stopped when the last session
// using it ends (also when that happens while it starts). It hands back connected sockets over
// Node's IPC channel, so however many connections there are, the pod costs one small process
// and no copying: the shim relays the bytes itself.
//
// The namespace is the pause process's, entered by a descriptor, not by PID: the shim opens
// /proc/<pid>/ns/net and then asks Docker again whether the sandbox still runs as that same PID
// with the same start time. If it does, the process was alive throughout, so the descriptor is
// its namespace and not that of a process that got its PID after it died (another pod's, or the
// host's); the relay enters the namespace by that descriptor (setns on its fd 3).
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { DockerClient } from '../docker/client';
import { writeFileAtomic } from '../util/atomic-write';
import { builtProgram } from '../util/built-program';
import { assetBytes, SEA_ASSETS, singleExecutable } from '../util/single-executable';

/** A connect inside the pod that takes longer than this fails (a listener whose backlog is full). */
const DIAL_TIMEOUT_MS = 10_000;
const RELAY_START_TIMEOUT_MS = 10_000;
/** After a relay failed to start, dials fail with its reason for this long before another is tried. */
const RETRY_AFTER_MS = 1_000;

export interface PodRelay {
  dial(port: number): Promise<net.Socket>;
  kill(): void;
  /** Resolves when the relay process has exited. */
  readonly exited: Promise<void>;
}

/** What one port-forward session holds of its pod's relay. */
interface PodDialer {
  dial(port: number): Promise<net.Socket>;
  /** The session is done with the relay; the last to release it stops it. */
  release(): void;
}

export class PodRelays {
  private readonly entries = new Map<string, { refs: number; relay: Promise<PodRelay> | undefined }>();

  constructor(private readonly start: (sandboxId: string) => Promise<PodRelay>) {}

  acquire(sandboxId: string): PodDialer {
    let entry = this.entries.get(sandboxId);
    if (!entry) {
      entry = { refs: 0, relay: undefined };
      this.entries.set(sandboxId, entry);
    }
    const held = entry;
    held.refs++;
    let released = false;
    return {
      dial: async (port) => {
        if (released) throw new Error('the port-forward session is closed');
        return (await this.relayOf(sandboxId, held)).dial(port);
      },
      release: () => {
        if (released) return;
        released = true;
        if (--held.refs > 0) return;
        if (this.entries.get(sandboxId) === held) this.entries.delete(sandboxId);
        const relay = held.relay;
        held.relay = undefined;
        relay?.then((r) => r.kill(), () => undefined);
      },
    };
  }

  /** Relays running or starting (for tests). */
  get size(): number {
    return [...this.entries.values()].filter((e) => e.relay).length;
  }

  /** Stops every relay (the server is closing). */
  close(): void {
    for (const entry of this.entries.values()) {
      entry.refs = 0;
      entry.relay?.then((r) => r.kill(), () => undefined);
      entry.relay = undefined;
    }
    this.entries.clear();
  }

  private relayOf(sandboxId: string, entry: { refs: number; relay: Promise<PodRelay> | undefined }): Promise<PodRelay> {
    if (entry.relay) return entry.relay;
    const starting: Promise<PodRelay> = this.start(sandboxId).then((relay) => {
      // Every session let go while it started.
      if (entry.refs <= 0) {
        relay.kill();
        throw new Error('the port-forward session is closed');
      }
      void relay.exited.then(() => {
        if (entry.relay === starting) entry.relay = undefined;
      });
      return relay;
    });
    entry.relay = starting;
    starting.catch(() => {
      setTimeout(() => {
        if (entry.relay === starting) entry.relay = undefined;
      }, RETRY_AFTER_MS).unref();
    });
    return starting;
  }
}

/**
 * The pause process's network namespace, opened and checked to be its own (see the top of the
 * file); the caller closes the descriptor. `docker` must answer from Docker, not from a cache.
 */
export async function openPodNetns(docker: Pick<DockerClient, 'inspectContainer'>, sandboxId: string): Promise<number> {
  const before = await docker.inspectContainer(sandboxId);
  const pid = before.State.Running ? before.State.Pid : 0;
  if (!pid) throw new Error(`pod sandbox ${sandboxId} is not running`);
  let fd: number;
  try {
    fd = fs.openSync(`/proc/${pid}/ns/net`, 'r');
  } catch {
    throw new Error(`pod sandbox ${sandboxId} is not running`);
  }
  try {
    const after = await docker.inspectContainer(sandboxId);
    if (!after.State.Running || after.State.Pid !== pid || after.State.StartedAt !== before.State.StartedAt) {
      throw new Error(`pod sandbox ${sandboxId} stopped or restarted while port forward started`);
    }
    return fd;
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

let writtenOut: Promise<string> | undefined;

/**
 * The relay program: dist/port-relay/port-relay of this build; in the single executable its
 * asset, written out as `<rootDirectory>/port-relay` (root's, mode 0700) once per run, since
 * only a file can be executed.
 */
export function relayProgram(rootDirectory: string | undefined): Promise<string> {
  const sea = singleExecutable();
  if (!sea) {
    const program = builtProgram('port-relay', __dirname);
    return program ? Promise.resolve(program) : Promise.reject(new Error('the port relay was not built (npm run build needs gcc and libc6-dev)'));
  }
  if (rootDirectory === undefined) return Promise.reject(new Error('the single executable has no directory to write its port relay to'));
  writtenOut ??= (async () => {
    const program = path.join(rootDirectory, SEA_ASSETS.portRelay);
    await writeFileAtomic(program, assetBytes(sea, SEA_ASSETS.portRelay), 0o700);
    return program;
  })();
  // A failure is tried again at the next start.
  writtenOut.catch(() => (writtenOut = undefined));
  return writtenOut;
}

/** Starts `program` in the namespace `netns` (a descriptor the caller keeps and closes). */
export function startRelayIn(program: string, netns: number): Promise<PodRelay> {
  // The netns as its fd 3, the channel as fd 4 (port-relay.c); nothing of the shim's environment.
  const child = spawn(program, [], { stdio: ['ignore', 'ignore', 'pipe', netns, 'ipc'], env: {} });
  // A relay never keeps the shim running; it exits by itself when the shim is gone.
  child.unref();
  child.channel?.unref();
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the port relay did not start in time'));
    }, RELAY_START_TIMEOUT_MS);
    child.once('message', (msg: { ready?: boolean }) => {
      clearTimeout(timer);
      if (msg?.ready) resolve(new RelayProcess(child));
      else {
        child.kill('SIGKILL');
        reject(new Error('the port relay said something unexpected'));
      }
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot start the port relay: ${err.message}`));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(stderr.trim() || `the port relay exited with code ${code}`));
    });
  });
}

/** A relay for `sandboxId`'s namespace, checked as openPodNetns does. */
export async function startPodRelay(docker: Pick<DockerClient, 'inspectContainer'>, sandboxId: string, rootDirectory?: string): Promise<PodRelay> {
  const program = await relayProgram(rootDirectory);
  const netns = await openPodNetns(docker, sandboxId);
  try {
    return await startRelayIn(program, netns);
  } finally {
    // The relay has its own copy (and is in the namespace by now, or failed).
    fs.closeSync(netns);
  }
}

class RelayProcess implements PodRelay {
  private nextId = 1;
  private readonly dials = new Map<number, { resolve: (s: net.Socket) => void; reject: (err: Error) => void; timer: NodeJS.Timeout }>();
  readonly exited: Promise<void>;

  constructor(private readonly child: ChildProcess) {
    child.on('message', (msg: { id?: number; error?: string }, handle: unknown) => this.answer(msg, handle));
    this.exited = new Promise((resolve) => {
      const gone = (): void => {
        for (const d of this.dials.values()) {
          clearTimeout(d.timer);
          d.reject(new Error('the port relay exited'));
        }
        this.dials.clear();
        resolve();
      };
      if (child.exitCode !== null || child.signalCode !== null) gone();
      else child.once('exit', gone);
    });
  }

  dial(port: number): Promise<net.Socket> {
    return new Promise((resolve, reject) => {
      if (!this.child.connected) return reject(new Error('the port relay exited'));
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.dials.delete(id);
        reject(new Error(`connecting to localhost:${port} in the pod's network namespace took over ${DIAL_TIMEOUT_MS / 1000} s`));
      }, DIAL_TIMEOUT_MS);
      this.dials.set(id, { resolve, reject, timer });
      this.child.send({ id, port }, (err) => {
        if (!err) return;
        const d = this.dials.get(id);
        if (!d) return;
        this.dials.delete(id);
        clearTimeout(d.timer);
        reject(new Error(`the port relay is gone: ${err.message}`));
      });
    });
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  private answer(msg: { id?: number; error?: string }, handle: unknown): void {
    const d = typeof msg?.id === 'number' ? this.dials.get(msg.id) : undefined;
    if (!d) {
      // A dial we gave up on.
      if (handle instanceof net.Socket) handle.destroy();
      return;
    }
    this.dials.delete(msg.id!);
    clearTimeout(d.timer);
    if (handle instanceof net.Socket) {
      // As the relay's own connection was: either side may finish sending first.
      handle.allowHalfOpen = true;
      d.resolve(handle);
    } else d.reject(new Error(msg.error ?? 'the port relay could not connect'));
  }
}
