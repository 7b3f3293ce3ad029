// StreamPodSandboxes: the list ListPodSandbox answers (./list-pod-sandbox.ts), in bounded messages.
import type { StreamPodSandboxesResponse } from '../../cri/types';
import { streamOfList } from '../support/stream-batches';
import { listSandboxes } from './list-pod-sandbox';

/** Sandboxes per StreamPodSandboxes message: well under gRPC's default 4 MiB message limit. */
const STREAM_BATCH = 200;

export const streamPodSandboxes = streamOfList(listSandboxes, STREAM_BATCH, (podSandboxes): StreamPodSandboxesResponse => ({ podSandboxes }));
