// A typed, promise-returning CRI client built from the same contract the server serves.
import * as grpc from '@grpc/grpc-js';
import { criContract } from '../../src/cri/contract';
import type { ImageMethod, RuntimeMethod } from '../../src/cri/types';
import type { ImageServiceClient } from '../../src/generated/runtime/v1/ImageService';
import type { RuntimeServiceClient } from '../../src/generated/runtime/v1/RuntimeService';

type Promised<C, M extends keyof C> = {
  [K in M]: C[K] extends (argument: infer Req, callback: grpc.requestCallback<infer Res>) => grpc.ClientUnaryCall
    ? (req: Req, options?: grpc.CallOptions) => Promise<Res>
    : C[K] extends (argument: infer Req, options?: grpc.CallOptions) => grpc.ClientReadableStream<infer Res>
      ? (req: Req, options?: grpc.CallOptions) => Promise<Res[]>
      : never;
};

export type RuntimeApi = Promised<RuntimeServiceClient, RuntimeMethod>;
export type ImageApi = Promised<ImageServiceClient, ImageMethod>;

export interface CriClient {
  runtime: RuntimeApi;
  images: ImageApi;
  close(): void;
}

/** `client`'s methods as promises: a unary call's answer, or a stream's messages once it ends. */
export function promised<T>(client: grpc.Client, definition: grpc.ServiceDefinition): T {
  const api: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(definition)) {
    const fn = (client as unknown as Record<string, (...args: unknown[]) => unknown>)[name]!.bind(client);
    api[name] = method.responseStream
      ? (req: unknown, options: grpc.CallOptions = {}) =>
          new Promise((resolve, reject) => {
            const items: unknown[] = [];
            const stream = fn(req, options) as grpc.ClientReadableStream<unknown>;
            stream.on('data', (item) => items.push(item));
            stream.on('error', reject);
            stream.on('end', () => resolve(items));
          })
      : (req: unknown, options: grpc.CallOptions = {}) =>
          new Promise((resolve, reject) => {
            fn(req, options, (err: grpc.ServiceError | null, res: unknown) => (err ? reject(err) : resolve(res)));
          });
  }
  return api as T;
}

/**
 * `address` as grpc-js takes it: unix:///path or host:port. `channelOptions` are added to the
 * defaults (the start-up benchmark gives each attempt a subchannel of its own, so one refused
 * connection's reconnect backoff does not delay the next attempt).
 */
export function criClient(address: string, channelOptions: grpc.ChannelOptions = {}): CriClient {
  const v1 = criContract().runtime.v1;
  const creds = grpc.credentials.createInsecure();
  const options = { 'grpc.enable_channelz': 0, 'grpc.enable_retries': 0, ...channelOptions };
  const runtime = new v1.RuntimeService(address, creds, options);
  const images = new v1.ImageService(address, creds, options);
  return {
    runtime: promised<RuntimeApi>(runtime, v1.RuntimeService.service),
    images: promised<ImageApi>(images, v1.ImageService.service),
    close() {
      runtime.close();
      images.close();
    },
  };
}

/** The gRPC status code of a failed call (for assert.rejects predicates). */
export function grpcCode(err: unknown): grpc.status | undefined {
  return (err as grpc.ServiceError | undefined)?.code;
}

export function rejectsWith(code: grpc.status, detailsPattern?: RegExp): (err: unknown) => boolean {
  return (err) => {
    const e = err as grpc.ServiceError;
    if (e.code !== code) throw new Error(`expected ${grpc.status[code]}, got ${grpc.status[e.code] ?? e.code}: ${e.details}`);
    if (detailsPattern && !detailsPattern.test(e.details)) {
      throw new Error(`details ${JSON.stringify(e.details)} do not match ${detailsPattern}`);
    }
    return true;
  };
}
