// StreamImages: the list ListImages answers (./list-images.ts), in bounded messages.
import type { StreamImagesResponse } from '../../cri/types';
import { streamOfList } from '../support/stream-batches';
import { findImages } from './list-images';

/** How many images one StreamImages message carries. */
const STREAM_BATCH = 100;

export const streamImages = streamOfList(findImages, STREAM_BATCH, (images): StreamImagesResponse => ({ images }));
