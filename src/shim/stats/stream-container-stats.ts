// StreamContainerStats: the list ListContainerStats answers (./list-container-stats.ts), in
// bounded messages.
import type { StreamContainerStatsResponse } from '../../cri/types';
import { streamOfList } from '../support/stream-batches';
import { collectContainerStats } from './list-container-stats';

/** Stats per StreamContainerStats message: far below gRPC's 4 MiB default. */
const STREAM_BATCH = 200;

export const streamContainerStats = streamOfList(collectContainerStats, STREAM_BATCH, (containerStats): StreamContainerStatsResponse => ({ containerStats }));
