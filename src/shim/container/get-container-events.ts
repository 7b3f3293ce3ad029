// GetContainerEvents (kubelet's evented PLEG): a stream that lasts as long as the client
// listens, carrying one message per container or sandbox transition (see ../../events). The
// stream ends with RESOURCE_EXHAUSTED when the client falls too far behind, and with
// UNAVAILABLE when the shim loses track of Docker; kubelet relists after either.
import type { CallContext, ContainerEventResponse, GetEventsRequest__Output, StreamSend } from '../../cri/types';
import type { ShimContext } from '../context';

export async function getContainerEvents(
  shim: ShimContext,
  _req: GetEventsRequest__Output,
  send: StreamSend<ContainerEventResponse>,
  ctx: CallContext,
): Promise<void> {
  const listener = shim.containerEvents.listen();
  try {
    for (;;) {
      const message = await listener.next(ctx.signal);
      if (message === undefined) return;
      // A client that stops reading lets the listener's own, bounded queue fill instead.
      if (!send(message)) await Promise.race([send.drained(), listener.ended]);
    }
  } finally {
    listener.close();
  }
}
