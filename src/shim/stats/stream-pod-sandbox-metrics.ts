// StreamPodSandboxMetrics: what ListPodSandboxMetrics answers (./list-pod-sandbox-metrics.ts),
// in bounded messages. The request has no filter, so the batches are sent directly rather
// than through streamOfList. Each message is its pods' encoded entries, one after another (the
// answer's field 1 is the stream message's too).
import { withEncoding } from '../../cri/contract';
import type { CallContext, StreamPodSandboxMetricsResponse } from '../../cri/types';
import type { ShimContext } from '../context';
import { sendInBatches } from '../support/stream-batches';
import { collectPodMetrics } from './list-pod-sandbox-metrics';

/** Pods per StreamPodSandboxMetrics message: a pod with a few containers is some tens of KiB. */
const STREAM_BATCH = 100;

export async function streamPodSandboxMetrics(shim: ShimContext, send: (res: StreamPodSandboxMetricsResponse) => void, ctx: CallContext): Promise<void> {
  const { pods } = await collectPodMetrics(shim, ctx);
  sendInBatches(pods, STREAM_BATCH, (batch) => send(withEncoding({}, Buffer.concat(batch))));
}
