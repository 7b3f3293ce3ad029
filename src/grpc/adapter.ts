// Turns our promise-returning RPC implementations into grpc-js handlers: one debug log line
// per call with its duration, the call told to the RpcRecorder (every call passes here, so this
// is the one place RPCs are timed for metrics), errors mapped through toGrpcStatus,
// cancellation surfaced as an AbortSignal, and UNIMPLEMENTED (naming the RPC) for every method
// we have not built.
import * as grpc from '@grpc/grpc-js';
import { checkRequestBounds } from '../cri/bounds';
import type { CallContext, ServerStreamImpl, UnaryImpl } from '../cri/types';
import { CancelledError, DeadlineExceededError, toGrpcStatus, UnimplementedError } from '../errors';
import type { Logger } from '../util/logger';
import { whenRoomIn } from '../util/stream-room';

type AnyUnary = UnaryImpl<unknown, unknown>;
type AnyStream = ServerStreamImpl<unknown, unknown>;

/**
 * A client whose deadline passes cancels the call a moment before our own deadline timer would
 * fire; a cancel this close to the deadline is reported as the deadline passing.
 */
const DEADLINE_SLACK_MS = 250;

/** A call's context, and `finish` to call once the handler has settled. */
function callContext(
  method: string,
  call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>,
): { ctx: CallContext; finish: () => void } {
  const controller = new AbortController();
  const raw = call.getDeadline();
  const deadline = raw instanceof Date ? raw : Number.isFinite(raw) && raw > 0 ? new Date(raw) : undefined;
  const deadlinePassed = (): DeadlineExceededError => new DeadlineExceededError(`${method}: the request's deadline passed`);
  let finished = false;
  let timer: NodeJS.Timeout | undefined;
  // grpc-js may report a cancel for a call we already answered; that one means nothing.
  call.on('cancelled', () => {
    if (finished) return;
    const nearDeadline = deadline !== undefined && Date.now() >= deadline.getTime() - DEADLINE_SLACK_MS;
    controller.abort(nearDeadline ? deadlinePassed() : new CancelledError(`${method}: cancelled by the client`));
  });
  if (deadline && deadline.getTime() <= Date.now()) {
    // Already past (the call waited in a queue behind others): no handler should start on it.
    controller.abort(deadlinePassed());
  } else if (deadline) {
    timer = setTimeout(() => controller.abort(deadlinePassed()), deadline.getTime() - Date.now());
    timer.unref();
  }
  const finish = (): void => {
    finished = true;
    if (timer) clearTimeout(timer);
  };
  return { ctx: { method, signal: controller.signal, deadline }, finish };
}

function toServiceError(err: unknown): Partial<grpc.ServiceError> {
  const { code, details } = toGrpcStatus(err);
  return { code, details, message: details };
}

export interface InFlightTracker {
  begin(): () => void;
}

/** Told of every finished call: the RPC's name (e.g. `RunPodSandbox`), its status code, its time. */
export interface RpcRecorder {
  observe(rpc: string, code: grpc.status, seconds: number): void;
}

export const NO_RPC_RECORDER: RpcRecorder = { observe: () => undefined };

/** What every handler needs besides the call: where to log, in-flight counting, the recorder. */
interface CallSinks {
  log: Logger;
  inFlight: InFlightTracker;
  recorder: RpcRecorder;
}

/**
 * Builds the grpc-js implementation of one service from a definition (which lists every RPC
 * of the contract) and our implementation (which may lack some).
 */
export function buildServiceHandlers(
  serviceName: string,
  definition: grpc.ServiceDefinition,
  impl: Record<string, unknown>,
  log: Logger,
  inFlight: InFlightTracker,
  recorder: RpcRecorder = NO_RPC_RECORDER,
): grpc.UntypedServiceImplementation {
  const handlers: grpc.UntypedServiceImplementation = {};
  const sinks: CallSinks = { log, inFlight, recorder };
  for (const [name, method] of Object.entries(definition)) {
    const rpc = { name, fullName: `${serviceName}/${name}` };
    const fn = impl[name];
    if (method.responseStream) {
      handlers[name] = streamHandler(rpc, typeof fn === 'function' ? (fn as AnyStream) : undefined, sinks);
    } else {
      handlers[name] = unaryHandler(rpc, typeof fn === 'function' ? (fn as AnyUnary) : undefined, sinks);
    }
  }
  return handlers;
}

/**
 * The request, once its fields are within their size bounds (see ../cri/bounds.ts) and its
 * caller is still waiting: a call given up before its handler starts does no work at all.
 */
function checkedRequest(request: unknown, signal: AbortSignal): Promise<unknown> {
  try {
    signal.throwIfAborted();
    checkRequestBounds(request);
    return Promise.resolve(request);
  } catch (err) {
    return Promise.reject(err);
  }
}

function notBuilt(fullName: string): UnimplementedError {
  return new UnimplementedError(`${fullName} is not implemented by cri-docker-shim`);
}

/** An RPC's bare name (the metrics label) and its full name (logs and messages). */
interface RpcName {
  name: string;
  fullName: string;
}

function unaryHandler(rpc: RpcName, fn: AnyUnary | undefined, sinks: CallSinks): grpc.handleUnaryCall<unknown, unknown> {
  const { fullName } = rpc;
  return (call, callback) => {
    const started = process.hrtime.bigint();
    const done = sinks.inFlight.begin();
    const { ctx, finish } = callContext(fullName, call);
    const run = fn ? checkedRequest(call.request, ctx.signal).then((req) => fn(req, ctx)) : Promise.reject(notBuilt(fullName));
    run.finally(finish).then(
      (res) => {
        callEnded(sinks, rpc, started, undefined);
        done();
        callback(null, res);
      },
      (err: unknown) => {
        callEnded(sinks, rpc, started, err);
        done();
        callback(toServiceError(err));
      },
    );
  };
}

function streamHandler(rpc: RpcName, fn: AnyStream | undefined, sinks: CallSinks): grpc.handleServerStreamingCall<unknown, unknown> {
  const { fullName } = rpc;
  return (call) => {
    const started = process.hrtime.bigint();
    const done = sinks.inFlight.begin();
    const { ctx, finish } = callContext(fullName, call);
    const send = Object.assign((res: unknown): boolean => !call.cancelled && call.write(res), {
      drained: (): Promise<void> => waitForDrain(call, ctx.signal),
    });
    const run = fn ? checkedRequest(call.request, ctx.signal).then((req) => fn(req, send, ctx)) : Promise.reject(notBuilt(fullName));
    run.finally(finish).then(
      () => {
        callEnded(sinks, rpc, started, undefined);
        done();
        call.end();
      },
      (err: unknown) => {
        callEnded(sinks, rpc, started, err);
        done();
        // grpc-js turns an 'error' on a server stream into the call's status, sent after the
        // messages already written; destroy() would drop the status and leave the client waiting.
        call.emit('error', Object.assign(new Error(toGrpcStatus(err).details), toServiceError(err)));
      },
    );
  };
}

/** Settles when the call's write buffer has emptied, or the call ended or was cancelled. */
function waitForDrain(call: grpc.ServerWritableStream<unknown, unknown>, signal: AbortSignal): Promise<void> {
  if (!call.writableNeedDrain || call.cancelled || signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => whenRoomIn(call, resolve, signal));
}

/** Logs the finished call and tells the recorder. */
function callEnded({ log, recorder }: CallSinks, rpc: RpcName, started: bigint, err: unknown): void {
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (err === undefined) {
    recorder.observe(rpc.name, grpc.status.OK, seconds);
    log.debug({ rpc: rpc.fullName, durationMs: seconds * 1e3 }, 'rpc ok');
  } else {
    const { code, details } = toGrpcStatus(err);
    recorder.observe(rpc.name, code, seconds);
    log.debug({ rpc: rpc.fullName, durationMs: seconds * 1e3, code: grpc.status[code], error: details }, 'rpc failed');
  }
}
