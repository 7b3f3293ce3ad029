// The one builder of sandbox checkpoints for unit tests.
import { CHECKPOINT_VERSION, type SandboxCheckpoint } from '../../src/checkpoint/checkpoint';

/** The checkpoint of pod default/web (uid-1, attempt 3), host network, runtime handler runc, plus `over`. */
export function sandboxCheckpoint(over: Partial<SandboxCheckpoint> = {}): SandboxCheckpoint {
  return {
    version: CHECKPOINT_VERSION,
    id: '0123456789abcdef'.repeat(4),
    name: 'web',
    namespace: 'default',
    uid: 'uid-1',
    attempt: 3,
    createdAt: '1763776000123456789',
    runtimeHandler: 'runc',
    hostNetwork: true,
    portMappings: [],
    labels: { app: 'web' },
    annotations: { note: 'x' },
    ...over,
  };
}
