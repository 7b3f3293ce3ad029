// Shapes of our RPC implementations, derived from the generated service handler types, so a
// handler that returns the wrong message fails to compile.
import type * as grpc from '@grpc/grpc-js';
import type { RuntimeServiceHandlers } from '../generated/runtime/v1/RuntimeService';
import type { ImageServiceHandlers } from '../generated/runtime/v1/ImageService';

export type * from '../generated/index';

/** What a handler may know about the call it serves. */
export interface CallContext {
  /** The RPC's full name, e.g. "RuntimeService/Version". */
  readonly method: string;
  /** Aborted when the client cancels (reason: CancelledError) or its deadline passes (DeadlineExceededError). */
  readonly signal: AbortSignal;
  /** The client's deadline, if it set one. */
  readonly deadline: Date | undefined;
}

export type UnaryImpl<Req, Res> = (req: Req, ctx: CallContext) => Promise<Res>;
/** Writes one message of a server stream. */
export interface StreamSend<Res> {
  /** False when the client is behind and the message waits in the transport's buffer. */
  (res: Res): boolean;
  /** Settles once the client has taken what was buffered, or the call ended. */
  drained(): Promise<void>;
}
export type ServerStreamImpl<Req, Res> = (req: Req, send: StreamSend<Res>, ctx: CallContext) => Promise<void>;

type ImplOf<H> =
  H extends grpc.handleServerStreamingCall<infer Req, infer Res>
    ? Parameters<H>['length'] extends 1
      ? ServerStreamImpl<Req, Res>
      : H extends grpc.handleUnaryCall<infer UReq, infer URes>
        ? UnaryImpl<UReq, URes>
        : never
    : H extends grpc.handleUnaryCall<infer Req, infer Res>
      ? UnaryImpl<Req, Res>
      : never;

type MethodsOf<H> = { [K in keyof H as string extends K ? never : K]: H[K] };

export type RuntimeMethod = keyof MethodsOf<RuntimeServiceHandlers>;
export type ImageMethod = keyof MethodsOf<ImageServiceHandlers>;

/** A (possibly partial) implementation of RuntimeService; missing methods answer UNIMPLEMENTED. */
export type RuntimeServiceImpl = Partial<{ [K in RuntimeMethod]: ImplOf<RuntimeServiceHandlers[K]> }>;
export type ImageServiceImpl = Partial<{ [K in ImageMethod]: ImplOf<ImageServiceHandlers[K]> }>;
