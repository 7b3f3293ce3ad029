// ListPodSandbox: every sandbox this shim made, from Docker's pause containers (one typed query,
// ../../object-store/shim-objects.ts, answered by the state cache from memory) plus checkpoints whose
// container is gone (NOTREADY, so kubelet removes them), filtered by ID prefix, state and label
// selector together. The answer is kept while nothing changes (../list-answers.ts).
import type { CallContext, ListPodSandboxRequest__Output, ListPodSandboxResponse, PodSandbox, PodSandboxFilter__Output } from '../../cri/types';
import { matchesObjectQuery, objectQueryOf } from '../../object-store/shim-objects';
import type { ShimContext } from '../context';
import { sandboxFromCheckpoint, sandboxFromObject } from '../../translate/to-cri/sandbox-convert';

export async function listSandboxes(shim: ShimContext, filter: PodSandboxFilter__Output | null, { signal }: Pick<CallContext, 'signal'>): Promise<PodSandbox[]> {
  const query = objectQueryOf('sandbox', filter);
  // By ID alone: a pause container the rest of the filter leaves out still has its checkpoint
  // stand for it, not for a gone one.
  const [pauses, checkpoints] = await Promise.all([shim.objects.list({ kind: 'sandbox', id: query.id }, { signal }), shim.checkpoints.readAll()]);
  const byId = new Map(checkpoints.map((c) => [c.id, c]));
  const sandboxes = pauses.filter((p) => matchesObjectQuery(p, query)).map((p) => sandboxFromObject(p, byId.get(p.id)));
  const listed = new Set(pauses.map((p) => p.id));
  for (const c of checkpoints) {
    if (listed.has(c.id)) continue;
    const s = sandboxFromCheckpoint(c);
    if (matchesObjectQuery({ kind: 'sandbox', id: c.id, sandboxId: '', labels: c.labels, state: 'SANDBOX_NOTREADY' }, query)) sandboxes.push(s);
  }
  return sandboxes;
}

export function listPodSandbox(shim: ShimContext, req: ListPodSandboxRequest__Output, ctx: CallContext): Promise<ListPodSandboxResponse> {
  return shim.listAnswers.answer(`ListPodSandbox ${JSON.stringify(req.filter)}`, async () => ({ items: await listSandboxes(shim, req.filter, ctx) }));
}
