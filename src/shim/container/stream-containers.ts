// StreamContainers: the list ListContainers answers (./list-containers.ts), in bounded messages.
import type { StreamContainersResponse } from '../../cri/types';
import { streamOfList } from '../support/stream-batches';
import { findContainers } from './list-containers';

/** Containers per StreamContainers message. */
const STREAM_BATCH = 500;

export const streamContainers = streamOfList(findContainers, STREAM_BATCH, (containers): StreamContainersResponse => ({ containers }));
