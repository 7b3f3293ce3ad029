// The sandbox handlers' process-wide state, kept beside the ShimContext rather than in it:
// the checkpoints (under the root directory, held in memory) and the per-sandbox locks.
import { CheckpointCache } from '../../checkpoint/cache';
import { CheckpointStore } from '../../checkpoint/store';
import type { ShimContext } from '../context';
import { KeyedLock } from './keyed-lock';

export interface SandboxState {
  readonly checkpoints: CheckpointCache;
  /** Keyed by sandbox ID (stop, remove) or by Docker name (run). */
  readonly locks: KeyedLock;
}

const states = new WeakMap<ShimContext, SandboxState>();

export function sandboxState(shim: ShimContext): SandboxState {
  let state = states.get(shim);
  if (!state) {
    state = { checkpoints: new CheckpointCache(new CheckpointStore(shim.config.rootDirectory, shim.log)), locks: new KeyedLock() };
    states.set(shim, state);
  }
  return state;
}
