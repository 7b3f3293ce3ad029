// ListContainers: the shim's containers, filtered by ID prefix, state, pod sandbox ID and label
// selector, all combined: one typed query (../../object-store/shim-objects.ts), answered by the state
// cache from memory, or by Docker's list while the cache is unsynced. The answer is kept while
// nothing changes (../list-answers.ts).
import type { CallContext, Container, ContainerFilter__Output, ListContainersRequest__Output, ListContainersResponse } from '../../cri/types';
import { objectQueryOf } from '../../object-store/shim-objects';
import type { ShimContext } from '../context';
import { containerFromObject } from '../../translate/to-cri/container-convert';

export async function findContainers(shim: ShimContext, filter: ContainerFilter__Output | null, { signal }: Pick<CallContext, 'signal'>): Promise<Container[]> {
  return (await shim.objects.list(objectQueryOf('container', filter), { signal })).map(containerFromObject);
}

export function listContainers(shim: ShimContext, req: ListContainersRequest__Output, ctx: CallContext): Promise<ListContainersResponse> {
  return shim.listAnswers.answer(`ListContainers ${JSON.stringify(req.filter)}`, async () => ({ containers: await findContainers(shim, req.filter, ctx) }));
}
