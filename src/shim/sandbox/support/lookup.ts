// Finds the sandbox an RPC names: its pause container in Docker (ID or unique prefix) and its
// checkpoint, or the checkpoint alone when the container is gone.
import type { SandboxCheckpoint } from '../../../checkpoint/checkpoint';
import type { CallOptions } from '../../../docker/client';
import type { ShimIdentity } from '../../../object-store/shim-objects';
import { InvalidArgumentError, NotFoundError } from '../../../errors';
import type { PodRef } from '../../../network/network-host';
import type { ShimContext } from '../../context';
import { validateId } from '../../../conventions/ids';
import { identifyShimObject } from '../../support/resolve';
import { podRefOf, usesHostNetwork } from '../../../translate/to-cri/sandbox-convert';
import type { PodNetworkFacts } from '../../../network/network-manager';
import { quote } from '../../../util/quote';

export interface FoundSandbox {
  /** The full ID. */
  id: string;
  /** The pause container (what never changes of it: its state is the caller's to ask); undefined when only the checkpoint remains. */
  container: ShimIdentity | undefined;
  checkpoint: SandboxCheckpoint | undefined;
}

/** The sandbox `id` (full or a unique prefix) names, or undefined when there is none. */
export async function findSandbox(shim: ShimContext, field: string, id: string, opts?: CallOptions): Promise<FoundSandbox | undefined> {
  validateId(field, id);
  const { checkpoints } = shim;
  const ambiguous = (count: number) => new InvalidArgumentError(`${field}: ${quote(id)} matches ${count} sandboxes; give more of the ID`);
  try {
    const container = await identifyShimObject(shim, 'sandbox', field, id, opts);
    // A prefix that also starts the ID of a pod whose pause container is gone names two pods,
    // as ListPodSandbox would show them.
    const gone = (await checkpoints.ids()).filter((c) => c !== container.id && c.startsWith(id));
    if (gone.length > 0) throw ambiguous(1 + gone.length);
    return { id: container.id, container, checkpoint: await checkpoints.read(container.id) };
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  const matches = (await checkpoints.ids()).filter((c) => c.startsWith(id));
  if (matches.length > 1) throw ambiguous(matches.length);
  if (matches.length === 0) return undefined;
  const checkpoint = await checkpoints.read(matches[0]!);
  return checkpoint ? { id: checkpoint.id, container: undefined, checkpoint } : undefined;
}

export function networkFacts(found: FoundSandbox): PodNetworkFacts {
  return { hostNetwork: usesHostNetwork(found.container?.networkMode, found.checkpoint) };
}

/** What the network plugin needs to know about the pod. */
export function networkTarget(found: FoundSandbox): PodRef {
  return podRefOf(found.id, found.container?.name ?? '', found.container?.dockerLabels, found.checkpoint);
}
