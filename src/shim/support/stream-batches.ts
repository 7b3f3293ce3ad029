// The Stream* RPCs send the same list their List* twin answers, cut into messages of at most
// `size` items, so that no message nears gRPC's 16 MiB limit however many items there are.
import type { CallContext } from '../../cri/types';
import type { ShimContext } from '../context';

export function sendInBatches<T>(items: readonly T[], size: number, send: (batch: T[]) => void): void {
  for (let i = 0; i < items.length; i += size) send(items.slice(i, i + size));
}

/** A Stream* handler made from its List* twin's finder and how one message wraps a batch. */
export function streamOfList<F, Item, Res>(
  find: (shim: ShimContext, filter: F, ctx: CallContext) => Promise<Item[]>,
  size: number,
  message: (batch: Item[]) => Res,
): (shim: ShimContext, req: { filter: F }, send: (res: Res) => void, ctx: CallContext) => Promise<void> {
  return async (shim, req, send, ctx) => sendInBatches(await find(shim, req.filter, ctx), size, (batch) => send(message(batch)));
}
