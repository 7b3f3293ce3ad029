// Holds calls until start-up has finished what they depend on. The shim binds its socket
// before the state cache's first sync, so that a restarted shim answers Version and Status at
// once (and kubelet's connection is made instead of backing off); every other call waits for
// the sync. So nothing sees container state, changes it, or opens the event stream before the
// cache holds all of it, exactly as when the socket was bound only after the sync.
import type { CallContext } from '../cri/types';

export interface StartupGate {
  /** Settles when the held calls may run (a rejection lets them run as well). */
  readonly ready: Promise<void>;
  /** RPC names that never wait: they depend on nothing `ready` is about. */
  readonly open: ReadonlySet<string>;
}

type Impl = (...args: unknown[]) => Promise<unknown>;

/**
 * `impl` with every method not in `gate.open` waiting for `gate.ready` first, or failing with
 * the call's own cancel or deadline (its CallContext, the last argument, says which) if that
 * comes first. Once ready, calls go straight through.
 */
export function holdUntilReady<T extends object>(impl: T, gate: StartupGate): T {
  let ready = false;
  const opened = (): void => {
    ready = true;
  };
  void gate.ready.then(opened, opened);
  const held: Record<string, unknown> = { ...(impl as Record<string, unknown>) };
  for (const [name, fn] of Object.entries(impl)) {
    if (typeof fn !== 'function' || gate.open.has(name)) continue;
    const call = fn as Impl;
    // Once ready, the call itself and no promise of ours around it: this runs on every call.
    held[name] = (...args: unknown[]): Promise<unknown> =>
      ready ? call(...args) : readyOrAborted(gate.ready, (args[args.length - 1] as CallContext).signal).then(() => call(...args));
  }
  return held as T;
}

function readyOrAborted(ready: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const go = (): void => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    ready.then(go, go);
  });
}
