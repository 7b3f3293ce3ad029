// StreamPodSandboxStats: the list ListPodSandboxStats answers (./list-pod-sandbox-stats.ts),
// in bounded messages.
import type { StreamPodSandboxStatsResponse } from '../../cri/types';
import { streamOfList } from '../support/stream-batches';
import { collectPodStats } from './list-pod-sandbox-stats';

/** Pod stats per StreamPodSandboxStats message. */
const STREAM_BATCH = 100;

export const streamPodSandboxStats = streamOfList(collectPodStats, STREAM_BATCH, (podSandboxStats): StreamPodSandboxStatsResponse => ({ podSandboxStats }));
