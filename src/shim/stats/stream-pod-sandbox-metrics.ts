// StreamPodSandboxMetrics: what ListPodSandboxMetrics answers (./list-pod-sandbox-metrics.ts),
// in bounded messages. The request has no filter, so the batches are sent directly rather
// than through streamOfList.
import type { CallContext, StreamPodSandboxMetricsResponse } from '../../cri/types';
import type { ShimContext } from '../context';
import { sendInBatches } from '../support/stream-batches';
import { collectPodMetrics } from './list-pod-sandbox-metrics';

/** Pods per StreamPodSandboxMetrics message: a pod with a few containers is some tens of KiB. */
const STREAM_BATCH = 100;

export async function streamPodSandboxMetrics(shim: ShimContext, send: (res: StreamPodSandboxMetricsResponse) => void, ctx: CallContext): Promise<void> {
  sendInBatches(await collectPodMetrics(shim, ctx), STREAM_BATCH, (podSandboxMetrics) => send({ podSandboxMetrics }));
}
